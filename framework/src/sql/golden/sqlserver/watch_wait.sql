DECLARE @looks bigint = @P1;
DECLARE @every varchar(12) = @P2;
WHILE @looks > 0 AND NOT EXISTS (SELECT 0 AS [Ready]
WHERE EXISTS (SELECT 1 FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST, READCOMMITTEDLOCK))
UNION ALL
SELECT 1 AS [Ready]
WHERE EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P3 AND [VisibleAfter] <= SYSUTCDATETIME()))
BEGIN
    WAITFOR DELAY @every;
    SET @looks = @looks - 1;
END;
SELECT 0 AS [Ready]
WHERE EXISTS (SELECT 1 FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST, READCOMMITTEDLOCK))
UNION ALL
SELECT 1 AS [Ready]
WHERE EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P3 AND [VisibleAfter] <= SYSUTCDATETIME());