-- Returns a row when NimbusSubscriptions has the LastSeenAt column (else seed 003's upgrade is due).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- Returns: Present (1)
-- The column is looked up by the names as values (sys.tables, sys.columns), not by
-- COL_LENGTH(QUOTENAME(...)), whose quoting Babelfish does differently for names with ' or ".
SELECT 1 AS [Present]
WHERE EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = N'NimbusSubscriptions'
        AND c.[name] = N'LastSeenAt');
