-- Adds LastSeenAt to a NimbusSubscriptions created before heartbeats (seed 003's upgrade).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- The seed's statement: existing subscriptions get the default, so they count as seen now.
IF COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'LastSeenAt') IS NULL
ALTER TABLE {schema}.[NimbusSubscriptions] ADD [LastSeenAt] DATETIME2 NOT NULL DEFAULT SYSUTCDATETIME();
