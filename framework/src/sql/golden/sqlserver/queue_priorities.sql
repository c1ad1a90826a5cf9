SELECT CAST([Priority] AS bigint) AS [Priority], CAST(COUNT(*) AS bigint) AS [Waiting]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
GROUP BY [Priority]
ORDER BY [Priority] DESC;