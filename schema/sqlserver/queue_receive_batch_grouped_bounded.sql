-- Deletes and returns up to N rows of a grouped queue table, each the first of its group (as
-- queue_receive_grouped.sql chooses one), never two of one group: the receive used while a
-- queue's first messages are all held, where queue_receive_batch_grouped.sql, reading on until
-- it has N, would read the whole queue with two index look-ups per row. Two looks, each with a
-- bounded cost however deep the queue is:
--   front: the oldest 256 rows not held by others, oldest first (first in, first out);
--   heads: only when the front gave nothing (every group there is held or waiting), the first
--   message of each group, from the (GroupKey, RowVersion) index (one index entry per message,
--   no look-up) and, for a group whose failed message waits as a retry copy, the
--   (GroupPosition, GroupKey) index; stopping once N are taken.
-- The rows chosen are locked (UPDLOCK, held to the end of the receive's transaction) as they
-- are chosen, then deleted.
-- The heads are looked for only when the last parameter is 1: a process lets one receive of a
-- queue at a time look, and after a look that took nothing, waits ten times as long as it took
-- before the next (while every group is held, each look would read the whole group index and
-- find nothing).
-- Parameters: 1 at most this many rows (bigint), 2 whether to look at the heads (int: 1 yes, 0 no)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (bit, by database time), Expires, GroupKey, the message's place in its group; in RowVersion order
DECLARE @taken TABLE ([RowVersion] bigint NOT NULL);
DECLARE @messages TABLE (
    [Id]             uniqueidentifier NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL,
    [GroupKey]       varchar(255)     NULL,
    [GroupPosition]  bigint           NULL,
    [RowVersion]     bigint           NOT NULL
);
INSERT INTO @taken ([RowVersion])
SELECT TOP (@P1) q.[RowVersion]
FROM (SELECT TOP (256) w.[RowVersion]
      FROM {table} AS w WITH (READPAST)
      ORDER BY w.[RowVersion]) AS front
JOIN {table} AS q WITH (UPDLOCK, READPAST, ROWLOCK) ON q.[RowVersion] = front.[RowVersion]
WHERE (q.[NotBefore] IS NULL OR q.[NotBefore] <= GETUTCDATE())
  AND (q.[GroupKey] IS NULL OR (
      NOT EXISTS (
          SELECT 1 FROM {table} AS older
          WHERE older.[GroupKey] = q.[GroupKey]
            AND older.[RowVersion] < COALESCE(q.[GroupPosition], q.[RowVersion]))
      AND NOT EXISTS (
          SELECT 1 FROM {table} AS older
          WHERE older.[GroupKey] = q.[GroupKey]
            AND older.[GroupPosition] < COALESCE(q.[GroupPosition], q.[RowVersion]))))
ORDER BY front.[RowVersion];
IF @P2 = 1 AND NOT EXISTS (SELECT 1 FROM @taken)
    INSERT INTO @taken ([RowVersion])
    SELECT TOP (@P1) q.[RowVersion]
    FROM (SELECT g.[GroupKey], MIN(g.[RowVersion]) AS [First]
          FROM {table} AS g
          WHERE g.[GroupKey] IS NOT NULL
          GROUP BY g.[GroupKey]) AS groups
    CROSS APPLY (
        SELECT groups.[First] AS [RowVersion]
        UNION ALL
        SELECT retry.[RowVersion]
        FROM (SELECT TOP (1) r.[RowVersion]
              FROM {table} AS r
              WHERE r.[GroupPosition] IS NOT NULL AND r.[GroupKey] = groups.[GroupKey]
              ORDER BY r.[GroupPosition]) AS retry) AS candidate
    JOIN {table} AS q WITH (UPDLOCK, READPAST, ROWLOCK) ON q.[RowVersion] = candidate.[RowVersion]
    WHERE (q.[NotBefore] IS NULL OR q.[NotBefore] <= GETUTCDATE())
      AND groups.[First] >= COALESCE(q.[GroupPosition], q.[RowVersion])
      AND NOT EXISTS (
          SELECT 1 FROM {table} AS older
          WHERE older.[GroupKey] = q.[GroupKey]
            AND older.[GroupPosition] < COALESCE(q.[GroupPosition], q.[RowVersion]));
DELETE FROM {table} WITH (ROWLOCK)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires], deleted.[GroupKey], deleted.[GroupPosition],
    deleted.[RowVersion]
INTO @messages
WHERE [RowVersion] IN (SELECT [RowVersion] FROM @taken);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires], [GroupKey], COALESCE([GroupPosition], [RowVersion]) AS [Place]
FROM @messages
ORDER BY [RowVersion];
