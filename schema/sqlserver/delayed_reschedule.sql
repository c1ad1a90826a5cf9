-- Moves the due time of a delayed message still waiting in NimbusDelayedMessages: 1 row when it was pending, 0 when it was delivered or never existed.
-- Parameters: 1 Id (uniqueidentifier), 2 delay in ms from now (bigint, NULL for none), 3 absolute due time (datetime2 UTC, NULL for none; wins over 2)
UPDATE {schema}.[NimbusDelayedMessages] WITH (ROWLOCK)
SET [Due] = COALESCE(@P3, DATEADD(millisecond, COALESCE(@P2, 0) % 1000, DATEADD(second, COALESCE(@P2, 0) / 1000, SYSUTCDATETIME())))
WHERE [Id] = @P1;
