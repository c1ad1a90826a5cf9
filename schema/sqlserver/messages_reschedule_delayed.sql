-- Moves the VisibleAfter of a delayed message of the shared-table layout while it is not yet visible: 1 row when it was pending, 0 when it was visible already or never existed.
-- Parameters: 1 MessageId (uniqueidentifier), 2 delay in ms from now (bigint, NULL for none), 3 absolute time (datetime2 UTC, NULL for none; wins over 2)
UPDATE {schema}.[NimbusMessages] WITH (ROWLOCK)
SET [VisibleAfter] = COALESCE(@P3, DATEADD(millisecond, COALESCE(@P2, 0) % 1000, DATEADD(second, COALESCE(@P2, 0) / 1000, SYSUTCDATETIME())))
WHERE [MessageId] = @P1 AND [VisibleAfter] > SYSUTCDATETIME();
