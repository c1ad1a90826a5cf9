SELECT COUNT_BIG(*) AS [Count]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages]
WHERE [Destination] = @P1;