SELECT 1 AS [Present]
WHERE COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'IdleSeconds') IS NOT NULL;