-- Counts the visible messages of a destination in NimbusMessages, up to 10,000, skipping locked rows.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: Estimate (bigint)
-- READCOMMITTEDLOCK as in queue_peek.sql: under READ_COMMITTED_SNAPSHOT (Azure SQL's default) the
-- rows other receivers are deleting would otherwise still be counted.
SELECT COUNT_BIG(*) AS [Estimate] FROM (
    SELECT TOP (10000) 1 AS [Visible]
    FROM {schema}.[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()) AS [visible];
