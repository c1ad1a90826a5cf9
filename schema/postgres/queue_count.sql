-- Counts the rows of a queue table exactly.
-- Parameters: none
-- Returns: Count (bigint)
SELECT count(*) AS "Count"
FROM {table}
