-- Estimates a queue table's depth as max(RowVersion) - min(RowVersion) + 1 (0 when empty).
-- Parameters: none
-- Returns: Estimate (bigint)
SELECT COALESCE(max("RowVersion") - min("RowVersion") + 1, 0)::bigint AS "Estimate"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
