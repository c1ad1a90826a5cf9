-- Adds the columns of ordered groups to NimbusMessages (shared-table layout) where they are
-- missing: GroupKey (the group a message belongs to, NULL for none) and GroupPlace (its place
-- in the group: microseconds since 1970 by the database's clock when it became visible, or the
-- place of the message a retry copy stands in for). Run only when the catalog shows GroupKey
-- missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 table name (sysname, passed as the value @P2: NimbusMessages)
-- One ALTER per column (Babelfish takes one column per ADD), each guarded by its own look-up.
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupKey')
ALTER TABLE {schema}.[NimbusMessages] ADD [GroupKey] varchar(255) NULL;

IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupPlace')
ALTER TABLE {schema}.[NimbusMessages] ADD [GroupPlace] bigint NULL;
