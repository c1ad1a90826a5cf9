-- Returns a row when NimbusSagas has the CompletedAt column (else upgrade_sagas_completed_at.sql is due).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- Returns: Present (1)
SELECT 1 AS [Present]
WHERE EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = N'NimbusSagas'
        AND c.[name] = N'CompletedAt');
