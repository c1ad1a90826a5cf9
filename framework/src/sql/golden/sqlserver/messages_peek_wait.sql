DECLARE @looks bigint = @P2;
DECLARE @every varchar(12) = @P3;
WHILE @looks > 0 AND NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME())
BEGIN
    WAITFOR DELAY @every;
    SET @looks = @looks - 1;
END;
SELECT COUNT_BIG(*) AS [Estimate] FROM (
    SELECT TOP (10000) 1 AS [Visible]
    FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()) AS [visible];