-- Adds CompletedAt to a NimbusSagas made before completed instances were kept: rows from before
-- it are running instances (completed ones were deleted).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = N'NimbusSagas'
        AND c.[name] = N'CompletedAt')
ALTER TABLE {schema}.[NimbusSagas] ADD [CompletedAt] datetime2 NULL;
