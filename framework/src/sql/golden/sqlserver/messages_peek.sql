SELECT COUNT_BIG(*) AS [Estimate] FROM (
    SELECT TOP (10000) 1 AS [Visible]
    FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()) AS [visible];