UPDATE "Zeb]ra ""x"" 'y'"."NimbusLimits"
SET "ReadyAt" = (statement_timestamp() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond'
WHERE ("Scope", "Slot") = (
    SELECT "Scope", "Slot" FROM "Zeb]ra ""x"" 'y'"."NimbusLimits"
    WHERE "Scope" = $1 AND "Slot" >= 0 AND "Slot" < $2::bigint
      AND "ReadyAt" <= (statement_timestamp() AT TIME ZONE 'utc')
    ORDER BY "ReadyAt"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
RETURNING "Slot"