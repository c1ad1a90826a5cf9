UPDATE [Zeb]]ra "x" 'y'].[NimbusSagas]
SET [State] = @P3, [Version] = [Version] + 1, [UpdatedAt] = SYSUTCDATETIME(),
    [CompletedAt] = SYSUTCDATETIME()
WHERE [Id] = @P1 AND [Version] = @P2;