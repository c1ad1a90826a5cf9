-- Counts the rows of a queue table exactly.
-- Parameters: none
-- Returns: Count (bigint)
SELECT COUNT_BIG(*) AS [Count]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"];
