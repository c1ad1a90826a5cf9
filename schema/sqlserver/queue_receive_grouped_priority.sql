-- Deletes and returns the first message of a queue table that keeps both ordered groups and
-- priorities, as queue_receive_grouped.sql chooses one (not waiting, the first of its group), taking the highest
-- Priority first and then the oldest: priorities choose which group goes next, and a group's
-- own messages keep their send order whatever their priorities.
-- Parameters: none
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (bit, by database time), Expires, GroupKey, the message's place in its group (bigint)
-- The form of queue_receive.sql with the group test in its subquery. The test reads the older
-- rows without READPAST: a row another receive holds still counts. Under SQL Server's locking
-- READ COMMITTED that read waits for the holder's commit; with READ_COMMITTED_SNAPSHOT on (and
-- on Babelfish) it reads the last committed row and never waits.
DECLARE @message TABLE (
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
DELETE FROM {table} WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires], deleted.[GroupKey], deleted.[GroupPosition],
    deleted.[RowVersion]
INTO @message
WHERE [RowVersion] = (
    SELECT TOP (1) q.[RowVersion]
    FROM {table} AS q WITH (UPDLOCK, READPAST, ROWLOCK)
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
    ORDER BY q.[Priority] DESC, q.[RowVersion]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires], [GroupKey], COALESCE([GroupPosition], [RowVersion]) AS [Place]
FROM @message;
