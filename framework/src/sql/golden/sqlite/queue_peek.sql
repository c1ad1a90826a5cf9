-- Estimates a queue table's depth as max(RowVersion) - min(RowVersion) + 1 (0 when empty).
-- Parameters: none
-- Returns: Estimate (integer)
SELECT COALESCE(max("RowVersion") - min("RowVersion") + 1, 0) AS "Estimate"
FROM "it's [Wal]] ""rus"""
