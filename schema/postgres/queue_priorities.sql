-- Counts a priority queue table's messages per priority, the highest first.
-- Parameters: none
-- Returns: Priority (integer), Waiting (integer: its messages in the table, those being handled included)
SELECT "Priority"::bigint, count(*)::bigint AS "Waiting"
FROM {table}
GROUP BY "Priority"
ORDER BY "Priority" DESC
