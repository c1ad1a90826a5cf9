-- Counts the rows of a destination in NimbusMessages exactly, visible or not.
-- Parameters: 1 Destination (text)
-- Returns: Count (integer)
SELECT count(*) AS "Count"
FROM "NimbusMessages"
WHERE "Destination" = ?1
