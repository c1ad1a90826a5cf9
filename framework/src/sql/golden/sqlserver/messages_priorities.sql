SELECT CAST([Priority] AS bigint) AS [Priority], CAST(COUNT(*) AS bigint) AS [Waiting]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages]
WHERE [Destination] = @P1
GROUP BY [Priority]
ORDER BY [Priority] DESC;