-- Counts the visible messages of a destination in NimbusMessages, up to 10,000.
-- Parameters: 1 Destination (text)
-- Returns: Estimate (integer)
SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM "NimbusMessages"
    WHERE "Destination" = ?1 AND "VisibleAfter" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    LIMIT 10000)
