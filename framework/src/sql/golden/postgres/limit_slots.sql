WITH missing AS MATERIALIZED (
    SELECT slot FROM generate_series(-1, $2::bigint - 1) AS slot
    WHERE NOT EXISTS (
        SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusLimits" AS have
        WHERE have."Scope" = $1::varchar AND have."Slot" = slot))
INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusLimits" ("Scope", "Slot", "ReadyAt")
SELECT $1::varchar, missing.slot, (statement_timestamp() AT TIME ZONE 'utc') - interval '1 second'
FROM missing
ON CONFLICT ("Scope", "Slot") DO NOTHING