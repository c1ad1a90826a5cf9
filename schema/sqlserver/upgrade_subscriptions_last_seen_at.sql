-- Adds LastSeenAt to a NimbusSubscriptions created before heartbeats (seed 003's upgrade).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- The seed's statement: existing subscriptions get the default, so they count as seen now.
-- The column is looked up by the names as values (sys.tables, sys.columns), not by
-- COL_LENGTH(QUOTENAME(...)), whose quoting Babelfish does differently for names with ' or ".
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = N'NimbusSubscriptions'
        AND c.[name] = N'LastSeenAt')
ALTER TABLE {schema}.[NimbusSubscriptions] ADD [LastSeenAt] DATETIME2 NOT NULL DEFAULT SYSUTCDATETIME();
