-- Deletes and returns up to N visible messages of a destination from NimbusMessages
-- (shared-table layout), each the first of its group (as messages_receive_grouped.sql chooses
-- one), never two of one group: the receive used while a destination's first messages are all
-- held, where messages_receive_batch_grouped.sql, reading on until it has N, would read the
-- whole destination. Two looks, each with a bounded cost however deep the queue is:
--   front: the destination's oldest 256 visible messages not held by others, oldest first;
--   heads: only when the front gave nothing, the first message of each of its groups, from
--   IX_NimbusMessages_Group (one index entry per message); stopping once N are taken.
-- The rows chosen are locked (UPDLOCK, held to the end of the receive's transaction) as they
-- are chosen, then deleted.
-- The heads are looked for only when the last parameter is 1: a process lets one receive of a
-- queue at a time look, and after a look that took nothing, waits ten times as long as it took
-- before the next (while every group is held, each look would read the whole group index and
-- find nothing).
-- Parameters: 1 Destination (nvarchar(255)), 2 at most this many rows (bigint), 3 whether to look at the heads (int: 1 yes, 0 no)
-- Returns: MessageId, CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (bit, by database time), ExpiresAt, GroupKey, the message's place in its group; in VisibleAfter, MessageId order
DECLARE @taken TABLE ([MessageId] uniqueidentifier NOT NULL);
DECLARE @messages TABLE (
    [MessageId]    uniqueidentifier NOT NULL,
    [Body]         varbinary(max)   NULL,
    [ExpiresAt]    datetime2        NULL,
    [VisibleAfter] datetime2        NOT NULL,
    [GroupKey]     varchar(255)     NULL,
    [GroupPlace]   bigint           NULL
);
INSERT INTO @taken ([MessageId])
SELECT TOP (@P2) q.[MessageId]
FROM (SELECT TOP (256) w.[MessageId], w.[VisibleAfter]
      FROM {schema}.[NimbusMessages] AS w WITH (READPAST)
      WHERE w.[Destination] = @P1 AND w.[VisibleAfter] <= SYSUTCDATETIME()
      ORDER BY w.[VisibleAfter], w.[MessageId]) AS front
JOIN {schema}.[NimbusMessages] AS q WITH (UPDLOCK, READPAST, ROWLOCK)
    ON q.[Destination] = @P1 AND q.[MessageId] = front.[MessageId]
WHERE q.[GroupKey] IS NULL OR NOT EXISTS (
    SELECT 1 FROM {schema}.[NimbusMessages] AS earlier
    WHERE earlier.[Destination] = q.[Destination] AND earlier.[GroupKey] = q.[GroupKey]
      AND (earlier.[GroupPlace] < q.[GroupPlace]
           OR (earlier.[GroupPlace] = q.[GroupPlace] AND earlier.[MessageId] < q.[MessageId])))
ORDER BY front.[VisibleAfter], front.[MessageId];
IF @P3 = 1 AND NOT EXISTS (SELECT 1 FROM @taken)
    INSERT INTO @taken ([MessageId])
    SELECT TOP (@P2) q.[MessageId]
    FROM (SELECT g.[MessageId],
                 ROW_NUMBER() OVER (PARTITION BY g.[GroupKey]
                                    ORDER BY g.[GroupPlace], g.[MessageId]) AS [Rank]
          FROM {schema}.[NimbusMessages] AS g
          WHERE g.[Destination] = @P1 AND g.[GroupKey] IS NOT NULL) AS heads
    JOIN {schema}.[NimbusMessages] AS q WITH (UPDLOCK, READPAST, ROWLOCK)
        ON q.[Destination] = @P1 AND q.[MessageId] = heads.[MessageId]
    WHERE heads.[Rank] = 1 AND q.[VisibleAfter] <= SYSUTCDATETIME();
DELETE FROM {schema}.[NimbusMessages] WITH (ROWLOCK)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt], deleted.[VisibleAfter],
    deleted.[GroupKey], deleted.[GroupPlace]
INTO @messages
WHERE [Destination] = @P1 AND [MessageId] IN (SELECT [MessageId] FROM @taken);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt], [GroupKey], [GroupPlace] AS [Place]
FROM @messages
ORDER BY [VisibleAfter], [MessageId];
