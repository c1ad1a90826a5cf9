-- Deletes a completed saga instance if it is still at the version it was read at; affects no
-- row when another change came first.
-- Parameters: 1 Id (uniqueidentifier), 2 Version read (bigint)
DELETE FROM {schema}.[NimbusSagas]
WHERE [Id] = @P1 AND [Version] = @P2;
