-- Lists the groups of a grouped queue table with messages waiting, the longest first.
-- Parameters: 1 at most this many groups (integer)
-- Returns: GroupKey, Waiting (integer: its messages in the table, the one being handled included), HeldUntil (text UTC: its first message waits for a delayed retry until then; NULL when it does not)
SELECT "GroupKey", count(*) AS "Waiting",
    CASE WHEN max("NotBefore") > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN max("NotBefore") END AS "HeldUntil"
FROM {table}
WHERE "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT ?1
