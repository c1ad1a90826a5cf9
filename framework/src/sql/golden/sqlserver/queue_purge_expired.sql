DELETE FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
WHERE [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion] FROM [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] WITH (READPAST)
    WHERE [Expires] < GETUTCDATE());