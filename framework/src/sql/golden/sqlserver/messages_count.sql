-- Counts the rows of a destination in NimbusMessages exactly, visible or not.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: Count (bigint)
SELECT COUNT_BIG(*) AS [Count]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages]
WHERE [Destination] = @P1;
