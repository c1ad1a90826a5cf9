-- Counts the rows of a queue table exactly.
-- Parameters: none
-- Returns: Count (integer)
SELECT count(*) AS "Count"
FROM {table}
