-- Estimates a queue table's depth as max(RowVersion) - min(RowVersion) + 1 (0 when empty), skipping locked rows.
-- Parameters: none
-- Returns: Estimate (bigint)
-- READCOMMITTEDLOCK as NServiceBus's peek: with READ_COMMITTED_SNAPSHOT on (Azure SQL's default)
-- a read would otherwise see the last committed version of rows other receivers are deleting
-- and over-count; with locking reads, READPAST skips them.
SELECT ISNULL(MAX([RowVersion]) - MIN([RowVersion]) + 1, 0) AS [Estimate]
FROM {table} WITH (READPAST, READCOMMITTEDLOCK);
