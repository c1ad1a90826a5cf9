DECLARE @looks bigint = @P1;
DECLARE @every varchar(12) = @P2;
WHILE @looks > 0 AND NOT EXISTS (SELECT 1 FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST, READCOMMITTEDLOCK))
BEGIN
    WAITFOR DELAY @every;
    SET @looks = @looks - 1;
END;
SELECT ISNULL(MAX([RowVersion]) - MIN([RowVersion]) + 1, 0) AS [Estimate]
FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST, READCOMMITTEDLOCK);