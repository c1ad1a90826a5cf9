-- Counts the visible messages of a destination in NimbusMessages, up to 10,000.
-- Parameters: 1 Destination (varchar)
-- Returns: Estimate (bigint)
SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
    WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
    LIMIT 10000) AS visible
