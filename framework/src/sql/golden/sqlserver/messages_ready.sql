SELECT 0 AS [Ready]
WHERE EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P3 AND [VisibleAfter] <= SYSUTCDATETIME())