IF COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'IdleSeconds') IS NULL
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusSubscriptions] ADD [IdleSeconds] BIGINT NULL;