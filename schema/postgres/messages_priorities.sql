-- Counts a destination's messages in NimbusMessages per priority, the highest first.
-- Parameters: 1 Destination (varchar)
-- Returns: Priority (bigint), Waiting (bigint: its messages in the table, those being handled and those delayed included)
SELECT "Priority"::bigint, count(*)::bigint AS "Waiting"
FROM {schema}."NimbusMessages"
WHERE "Destination" = $1
GROUP BY "Priority"
ORDER BY "Priority" DESC
