-- Counts the visible messages of a destination in NimbusMessages, up to 10,000, skipping locked rows.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: Estimate (bigint)
SELECT COUNT_BIG(*) AS [Estimate] FROM (
    SELECT TOP (10000) 1 AS [Visible]
    FROM {schema}.[NimbusMessages] WITH (READPAST)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()) AS [visible];
