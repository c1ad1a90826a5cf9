-- Upgrades a seed-003 NimbusSubscriptions created before heartbeats (the seed's statement):
-- existing subscriptions get the default, so they count as seen now.
-- @P1: the schema name (a value).
IF COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'LastSeenAt') IS NULL
ALTER TABLE {schema}.[NimbusSubscriptions] ADD [LastSeenAt] DATETIME2 NOT NULL DEFAULT SYSUTCDATETIME();
