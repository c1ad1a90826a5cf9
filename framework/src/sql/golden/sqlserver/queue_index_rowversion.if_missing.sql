IF NOT EXISTS (
    SELECT 1 FROM sys.indexes
    WHERE [object_id] = OBJECT_ID(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2))
        AND [name] = @P3)
CREATE NONCLUSTERED INDEX [Index_RowVersion]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [RowVersion] ASC
);