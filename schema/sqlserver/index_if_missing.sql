-- Runs an index creation statement only when the table has no index that serves: none of that name, and no non-clustered one whose first key columns are the index's (its first, and its second where it has more than one).
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 table name (sysname, passed as the value @P2), 3 index name (sysname, passed as the value @P3), 4 the index's first key column (sysname, passed as the value @P4), 5 its second key column (sysname, passed as the value @P5; empty when it has one)
-- The statement replaces the placeholder below with its trailing semicolon and whitespace trimmed.
-- By definition as well as by name, as NServiceBus checks its RowVersion index
-- (CheckIfNonClusteredRowVersionIndexIsPresent): an index of another name that serves counts,
-- and Babelfish for PostgreSQL lists an index under a name of its own (the PostgreSQL one), so a
-- guard by name alone would create it again at every start. The second key column tells apart
-- indexes of one table that start with the same column (NimbusMessages' all start with
-- Destination). The table is found by its names, not OBJECT_ID(QUOTENAME(...)), which Babelfish
-- quotes differently.
IF NOT EXISTS (
    SELECT 1
    FROM sys.tables AS t
    JOIN sys.indexes AS i ON i.[object_id] = t.[object_id]
    LEFT JOIN sys.index_columns AS ic ON ic.[object_id] = i.[object_id]
        AND ic.[index_id] = i.[index_id] AND ic.[key_ordinal] = 1
    LEFT JOIN sys.columns AS c ON c.[object_id] = ic.[object_id] AND c.[column_id] = ic.[column_id]
    LEFT JOIN sys.index_columns AS ic2 ON ic2.[object_id] = i.[object_id]
        AND ic2.[index_id] = i.[index_id] AND ic2.[key_ordinal] = 2
    LEFT JOIN sys.columns AS c2 ON c2.[object_id] = ic2.[object_id] AND c2.[column_id] = ic2.[column_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND (i.[name] = @P3
             OR (i.[type] = 2 AND c.[name] = @P4 AND (@P5 = N'' OR c2.[name] = @P5))))
{statement};
