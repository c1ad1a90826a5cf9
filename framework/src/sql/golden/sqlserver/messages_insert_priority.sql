INSERT INTO [Zeb]]ra "x" 'y'].[NimbusMessages] ([MessageId], [Destination], [Body], [VisibleAfter], [ExpiresAt], [Priority])
VALUES (@P1, @P2, @P3,
    COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME()))),
    COALESCE(@P5, CASE WHEN @P4 IS NULL THEN NULL ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, SYSUTCDATETIME())) END),
    @P8);