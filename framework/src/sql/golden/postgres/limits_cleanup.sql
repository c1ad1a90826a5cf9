DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusLimits"
WHERE ctid IN (
    SELECT ctid FROM "Zeb]ra ""x"" 'y'"."NimbusLimits"
    WHERE "ReadyAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)