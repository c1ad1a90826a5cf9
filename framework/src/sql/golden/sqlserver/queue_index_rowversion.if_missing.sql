-- Runs an index creation statement only when the table has no index of that name.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 table name (sysname, passed as the value @P2), 3 index name (sysname, passed as the value @P3)
-- The statement replaces the placeholder below with its trailing semicolon and whitespace trimmed.
IF NOT EXISTS (
    SELECT 1 FROM sys.indexes
    WHERE [object_id] = OBJECT_ID(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2))
        AND [name] = @P3)
CREATE NONCLUSTERED INDEX [Index_RowVersion]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [RowVersion] ASC
);
