-- Lists the groups of a destination in NimbusMessages with messages waiting, the longest first.
-- A group is held while a message whose place has passed waits for its VisibleAfter (a delayed
-- retry of its first message).
-- Parameters: 1 Destination (nvarchar(255)), 2 at most this many groups (bigint)
-- Returns: GroupKey, Waiting (bigint: its messages in the table, the one being handled included), HeldUntil (datetime2 UTC: its first message waits for a delayed retry until then; NULL when it does not)
-- READPAST is not used: a group whose first message is being handled is listed with it.
SELECT TOP (@P2) [GroupKey], CAST(COUNT(*) AS bigint) AS [Waiting],
    MAX(CASE WHEN [VisibleAfter] > SYSUTCDATETIME()
              AND [GroupPlace] < DATEDIFF_BIG(microsecond, CAST('1970-01-01' AS datetime2), SYSUTCDATETIME())
             THEN [VisibleAfter] END) AS [HeldUntil]
FROM {schema}.[NimbusMessages]
WHERE [Destination] = @P1 AND [GroupKey] IS NOT NULL
GROUP BY [GroupKey]
ORDER BY COUNT(*) DESC, [GroupKey];
