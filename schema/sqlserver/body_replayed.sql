-- Gives a body stored apart back to its message, replayed from the dead letters to a queue, in
-- the replay's transaction.
-- Parameters: 1 Id (uniqueidentifier), 2 Queue (nvarchar(255))
UPDATE {schema}.[NimbusBodies] SET [DeadLetteredAt] = NULL, [Queue] = @P2 WHERE [Id] = @P1;
