INSERT INTO [Zeb]]ra "x" 'y'].[NimbusMessages] ([MessageId], [Destination], [Body], [VisibleAfter], [ExpiresAt],
    [GroupKey], [GroupPlace])
VALUES (@P1, @P2, @P3,
    COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME()))),
    COALESCE(@P5, CASE WHEN @P4 IS NULL THEN NULL ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, SYSUTCDATETIME())) END),
    @P8,
    COALESCE(@P9, DATEDIFF_BIG(microsecond, CAST('1970-01-01' AS datetime2),
        CASE WHEN COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME()))) > SYSUTCDATETIME()
             THEN COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME())))
             ELSE SYSUTCDATETIME() END)));