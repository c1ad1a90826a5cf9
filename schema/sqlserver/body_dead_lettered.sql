-- Marks a body stored apart as its message's dead letter's, in the transaction that writes the
-- dead letter: kept for a replay until the dead letters' retention ends, whatever its Expires.
-- Parameters: 1 Id (uniqueidentifier)
UPDATE {schema}.[NimbusBodies] SET [DeadLetteredAt] = SYSUTCDATETIME(), [Expires] = NULL WHERE [Id] = @P1;
