UPDATE [Zeb]]ra "x" 'y'].[NimbusLimits] WITH (ROWLOCK)
SET [Held] = [Held] + 1, [ReadyAt] = SYSUTCDATETIME()
WHERE [Scope] = @P1 AND [Slot] = -1;