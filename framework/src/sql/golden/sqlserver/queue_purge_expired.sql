-- Deletes at most a batch of expired rows (by database time) of a queue table, skipping locked ones.
-- Parameters: 1 batch size (bigint)
DELETE FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
WHERE [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion] FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST)
    WHERE [Expires] < GETUTCDATE());
