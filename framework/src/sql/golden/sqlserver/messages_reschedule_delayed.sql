UPDATE [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (ROWLOCK)
SET [VisibleAfter] = COALESCE(@P3, DATEADD(millisecond, COALESCE(@P2, 0) % 1000, DATEADD(second, COALESCE(@P2, 0) / 1000, SYSUTCDATETIME())))
WHERE [MessageId] = @P1 AND [VisibleAfter] > SYSUTCDATETIME();