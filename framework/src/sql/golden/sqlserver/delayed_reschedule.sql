UPDATE [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] WITH (ROWLOCK)
SET [Due] = COALESCE(@P3, DATEADD(millisecond, COALESCE(@P2, 0) % 1000, DATEADD(second, COALESCE(@P2, 0) / 1000, SYSUTCDATETIME())))
WHERE [Id] = @P1;