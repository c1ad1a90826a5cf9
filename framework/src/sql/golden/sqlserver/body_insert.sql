INSERT INTO [Zeb]]ra "x" 'y'].[NimbusBodies] ([Id], [Queue], [Body], [Store], [Size], [Expires])
VALUES (@P1, @P2, @P3, @P4, @P5,
    COALESCE(@P7,
        CASE WHEN @P6 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P6 % 1000, DATEADD(second, @P6 / 1000, SYSUTCDATETIME())) END));