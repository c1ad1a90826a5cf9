-- Adds IdleSeconds to NimbusSubscriptions: the idle period (auto_delete_on_idle, in seconds) the
-- subscriber promised, so that publishers and sweepers judge each subscription by its own
-- subscriber's setting, not theirs. Rows from before it keep NULL and are judged by the reader's.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- The column is looked up by the names as values (sys.tables, sys.columns), not by
-- COL_LENGTH(QUOTENAME(...)), whose quoting Babelfish does differently for names with ' or ".
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = N'NimbusSubscriptions'
        AND c.[name] = N'IdleSeconds')
ALTER TABLE {schema}.[NimbusSubscriptions] ADD [IdleSeconds] BIGINT NULL;
