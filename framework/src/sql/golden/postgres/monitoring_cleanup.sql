DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMonitoring"
WHERE ctid IN (
    SELECT ctid FROM "Zeb]ra ""x"" 'y'"."NimbusMonitoring"
    WHERE "ReportedAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2)