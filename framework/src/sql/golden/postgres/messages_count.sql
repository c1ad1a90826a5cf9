-- Counts the rows of a destination in NimbusMessages exactly, visible or not.
-- Parameters: 1 Destination (varchar)
-- Returns: Count (bigint)
SELECT count(*) AS "Count"
FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "Destination" = $1
