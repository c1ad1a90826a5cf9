-- Counts a message the limit held back, in the transaction that puts it back to wait.
-- Parameters: 1 Scope (nvarchar(400))
UPDATE {schema}.[NimbusLimits] WITH (ROWLOCK)
SET [Held] = [Held] + 1, [ReadyAt] = SYSUTCDATETIME()
WHERE [Scope] = @P1 AND [Slot] = -1;
