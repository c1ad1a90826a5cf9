SELECT 1 AS [Present]
WHERE COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'LastSeenAt') IS NOT NULL;