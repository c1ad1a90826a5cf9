SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
    WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
    LIMIT 1000
    FOR KEY SHARE SKIP LOCKED) AS visible