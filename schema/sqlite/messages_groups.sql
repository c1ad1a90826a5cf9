-- Lists the groups of a destination in NimbusMessages with messages waiting, the longest first.
-- A group is held while a message whose place has passed waits for its VisibleAfter (a delayed
-- retry of its first message).
-- Parameters: 1 Destination (text), 2 at most this many groups (integer)
-- Returns: GroupKey, Waiting (integer: its messages in the table, the one being handled included), HeldUntil (text UTC: its first message waits for a delayed retry until then; NULL when it does not)
SELECT "GroupKey", count(*) AS "Waiting",
    max(CASE WHEN "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')
              AND "GroupPlace" < CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000
             THEN "VisibleAfter" END) AS "HeldUntil"
FROM "NimbusMessages"
WHERE "Destination" = ?1 AND "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT ?2
