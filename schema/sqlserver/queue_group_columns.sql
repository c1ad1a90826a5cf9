-- Adds the columns of ordered groups to a queue table where they are missing: GroupKey (the
-- group a message belongs to, NULL for none), GroupPosition (the RowVersion of the row a retry
-- copy stands in for, NULL for a first send) and NotBefore (a delayed retry of a grouped message
-- waits in its place until then). Run only when the catalog shows GroupKey missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 queue table name (sysname, passed as the value @P2)
-- One ALTER per column (Babelfish takes one column per ADD), each guarded by its own look-up.
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupKey')
ALTER TABLE {table} ADD [GroupKey] varchar(255) NULL;

IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupPosition')
ALTER TABLE {table} ADD [GroupPosition] bigint NULL;

IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'NotBefore')
ALTER TABLE {table} ADD [NotBefore] datetime NULL;
