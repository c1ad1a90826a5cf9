-- Marks a saga instance completed, with its last state, if it is still at the version it was
-- read at: it stays (for messages that arrive late to find it completed) until
-- saga_cleanup.sql deletes it; affects no row when another change came first.
-- Parameters: 1 Id (uniqueidentifier), 2 Version read (bigint), 3 State (nvarchar(max): JSON)
UPDATE {schema}.[NimbusSagas]
SET [State] = @P3, [Version] = [Version] + 1, [UpdatedAt] = SYSUTCDATETIME(),
    [CompletedAt] = SYSUTCDATETIME()
WHERE [Id] = @P1 AND [Version] = @P2;
