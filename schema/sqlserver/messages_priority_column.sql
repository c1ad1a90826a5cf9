-- Adds the Priority column to NimbusMessages (shared-table layout) where it is missing: higher
-- is received first, 0 (the default, which every sender that does not name one writes) is
-- normal.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 table name (sysname, passed as the value @P2: NimbusMessages)
-- SQL Server 2012 and later add a NOT NULL column with a constant default as metadata only
-- (Enterprise edition; other editions write it into every row once).
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'Priority')
ALTER TABLE {schema}.[NimbusMessages] ADD [Priority] smallint NOT NULL DEFAULT 0;
