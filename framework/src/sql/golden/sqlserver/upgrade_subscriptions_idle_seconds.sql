-- Adds IdleSeconds to NimbusSubscriptions: the idle period (auto_delete_on_idle, in seconds) the
-- subscriber promised, so that publishers and sweepers judge each subscription by its own
-- subscriber's setting, not theirs. Rows from before it keep NULL and are judged by the reader's.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'IdleSeconds') IS NULL
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusSubscriptions] ADD [IdleSeconds] BIGINT NULL;
