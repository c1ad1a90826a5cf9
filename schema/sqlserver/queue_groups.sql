-- Lists the groups of a grouped queue table with messages waiting, the longest first.
-- Parameters: 1 at most this many groups (bigint)
-- Returns: GroupKey, Waiting (bigint: its messages in the table, the one being handled included), HeldUntil (datetime UTC: its first message waits for a delayed retry until then; NULL when it does not)
-- READPAST is not used: a group whose first message is being handled is listed with it.
SELECT TOP (@P1) [GroupKey], CAST(COUNT(*) AS bigint) AS [Waiting],
    CASE WHEN MAX([NotBefore]) > GETUTCDATE() THEN MAX([NotBefore]) END AS [HeldUntil]
FROM {table}
WHERE [GroupKey] IS NOT NULL
GROUP BY [GroupKey]
ORDER BY COUNT(*) DESC, [GroupKey];
