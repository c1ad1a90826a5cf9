-- Counts a priority queue table's messages per priority, the highest first.
-- Parameters: none
-- Returns: Priority (bigint), Waiting (bigint: its messages in the table, those being handled included)
SELECT CAST([Priority] AS bigint) AS [Priority], CAST(COUNT(*) AS bigint) AS [Waiting]
FROM {table}
GROUP BY [Priority]
ORDER BY [Priority] DESC;
