-- Returns a row when NimbusSubscriptions has the LastSeenAt column (else seed 003's upgrade is due).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- Returns: Present (1)
SELECT 1 AS [Present]
WHERE COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'LastSeenAt') IS NOT NULL;
