INSERT INTO [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] ([Id], [CorrelationId], [ReplyToAddress], [Recoverable], [Expires], [Headers], [Body],
    [GroupKey], [GroupPosition], [NotBefore], [Priority])
VALUES (@P1, @P2, @P3, 1,
    COALESCE(@P7,
        CASE WHEN @P4 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, GETUTCDATE())) END),
    @P5, @P6, @P8, @P9,
    CASE WHEN @P10 IS NULL THEN NULL
         ELSE DATEADD(millisecond, @P10 % 1000, DATEADD(second, @P10 / 1000, GETUTCDATE())) END,
    @P11);