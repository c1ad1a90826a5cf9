SELECT TOP (@P1) [GroupKey], CAST(COUNT(*) AS bigint) AS [Waiting],
    CASE WHEN MAX([NotBefore]) > GETUTCDATE() THEN MAX([NotBefore]) END AS [HeldUntil]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
WHERE [GroupKey] IS NOT NULL
GROUP BY [GroupKey]
ORDER BY COUNT(*) DESC, [GroupKey];