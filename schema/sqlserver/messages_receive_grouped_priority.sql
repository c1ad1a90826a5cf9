-- Deletes and returns the first visible message of a destination in NimbusMessages when the
-- table keeps both ordered groups and priorities, as messages_receive_grouped.sql chooses one
-- (the first of its group), taking the highest Priority first: priorities choose which group
-- goes next, and a group's own messages keep their order whatever their priorities.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: MessageId, CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (bit, by database time), ExpiresAt, GroupKey, the message's place in its group (bigint)
-- The form of messages_receive.sql with the group test in its subquery. The test reads the
-- earlier rows without READPAST: a row another receive holds still counts. Under SQL Server's
-- locking READ COMMITTED that read waits for the holder's commit; with READ_COMMITTED_SNAPSHOT
-- on (and on Babelfish) it reads the last committed row and never waits.
DECLARE @message TABLE (
    [MessageId]  uniqueidentifier NULL,
    [Body]       varbinary(max)   NULL,
    [ExpiresAt]  datetime2        NULL,
    [GroupKey]   varchar(255)     NULL,
    [GroupPlace] bigint           NULL
);
DELETE FROM {schema}.[NimbusMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt], deleted.[GroupKey],
    deleted.[GroupPlace]
INTO @message
WHERE [MessageId] = (
    SELECT TOP (1) q.[MessageId]
    FROM {schema}.[NimbusMessages] AS q WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE q.[Destination] = @P1 AND q.[VisibleAfter] <= SYSUTCDATETIME()
      AND (q.[GroupKey] IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}.[NimbusMessages] AS earlier
          WHERE earlier.[Destination] = q.[Destination] AND earlier.[GroupKey] = q.[GroupKey]
            AND (earlier.[GroupPlace] < q.[GroupPlace]
                 OR (earlier.[GroupPlace] = q.[GroupPlace] AND earlier.[MessageId] < q.[MessageId]))))
    ORDER BY q.[Priority] DESC, q.[VisibleAfter], q.[MessageId]);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt], [GroupKey], [GroupPlace] AS [Place]
FROM @message;
