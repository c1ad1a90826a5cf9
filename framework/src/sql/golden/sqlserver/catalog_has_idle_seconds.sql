-- Returns a row when NimbusSubscriptions has the IdleSeconds column (else upgrade_subscriptions_idle_seconds.sql is due).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- Returns: Present (1)
SELECT 1 AS [Present]
WHERE COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'IdleSeconds') IS NOT NULL;
