-- Estimates a queue table's depth as max(RowVersion) - min(RowVersion) + 1 (0 when empty), skipping locked rows.
-- Parameters: none
-- Returns: Estimate (bigint)
SELECT ISNULL(MAX([RowVersion]) - MIN([RowVersion]) + 1, 0) AS [Estimate]
FROM {table} WITH (READPAST);
