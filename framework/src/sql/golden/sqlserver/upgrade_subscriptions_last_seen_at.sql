IF COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'LastSeenAt') IS NULL
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusSubscriptions] ADD [LastSeenAt] DATETIME2 NOT NULL DEFAULT SYSUTCDATETIME();