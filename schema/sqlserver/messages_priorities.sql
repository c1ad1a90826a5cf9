-- Counts a destination's messages in NimbusMessages per priority, the highest first.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: Priority (bigint), Waiting (bigint: its messages in the table, those being handled and those delayed included)
SELECT CAST([Priority] AS bigint) AS [Priority], CAST(COUNT(*) AS bigint) AS [Waiting]
FROM {schema}.[NimbusMessages]
WHERE [Destination] = @P1
GROUP BY [Priority]
ORDER BY [Priority] DESC;
