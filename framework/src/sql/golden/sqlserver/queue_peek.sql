SELECT ISNULL(MAX([RowVersion]) - MIN([RowVersion]) + 1, 0) AS [Estimate]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST, READCOMMITTEDLOCK);