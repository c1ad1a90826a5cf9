-- Counts a destination's messages in NimbusMessages per priority, the highest first.
-- Parameters: 1 Destination (text)
-- Returns: Priority (integer), Waiting (integer: its messages in the table, those being handled and those delayed included)
SELECT "Priority", count(*) AS "Waiting"
FROM "NimbusMessages"
WHERE "Destination" = ?1
GROUP BY "Priority"
ORDER BY "Priority" DESC
