IF COL_LENGTH(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2), N'BodyString') IS NULL
ALTER TABLE [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
ADD [BodyString] AS CAST([Body] AS nvarchar(max));