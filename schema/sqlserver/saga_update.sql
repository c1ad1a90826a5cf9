-- Writes a saga instance's new state if it is still at the version it was read at, and moves
-- it to the next version; affects no row when another change came first.
-- Parameters: 1 Id (uniqueidentifier), 2 Version read (bigint), 3 State (nvarchar(max): JSON)
UPDATE {schema}.[NimbusSagas]
SET [State] = @P3, [Version] = [Version] + 1, [UpdatedAt] = SYSUTCDATETIME()
WHERE [Id] = @P1 AND [Version] = @P2;
