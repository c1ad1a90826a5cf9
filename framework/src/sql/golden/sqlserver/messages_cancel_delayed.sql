DELETE FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (ROWLOCK)
WHERE [MessageId] = @P1 AND [VisibleAfter] > SYSUTCDATETIME();