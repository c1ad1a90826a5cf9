-- Lists the groups of a destination in NimbusMessages with messages waiting, the longest first.
-- A group is held while a message whose place has passed waits for its VisibleAfter (a delayed
-- retry of its first message).
-- Parameters: 1 Destination (varchar), 2 at most this many groups (bigint)
-- Returns: GroupKey, Waiting (bigint: its messages in the table, the one being handled included), HeldUntil (timestamp UTC: its first message waits for a delayed retry until then; NULL when it does not)
SELECT "GroupKey", count(*)::bigint AS "Waiting",
    max(CASE WHEN "VisibleAfter" > (now() AT TIME ZONE 'utc')
              AND "GroupPlace" < (extract(epoch FROM now() AT TIME ZONE 'utc') * 1000000)::bigint
             THEN "VisibleAfter" END) AS "HeldUntil"
FROM {schema}."NimbusMessages"
WHERE "Destination" = $1 AND "GroupKey" IS NOT NULL
GROUP BY "GroupKey"
ORDER BY count(*) DESC, "GroupKey"
LIMIT $2
