-- The receive used while a queue's first messages are all held (see the PostgreSQL file): on
-- SQL Server the same as queue_receive_batch_grouped.sql for now, which reads on until it has N.
-- Parameters: 1 at most this many rows (bigint)
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (bit, by database time), Expires, GroupKey, the message's place in its group; in RowVersion order
-- The form of queue_receive_batch.sql with the group test of queue_receive_grouped.sql.
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
DELETE FROM {table} WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires], deleted.[GroupKey], deleted.[GroupPosition],
    deleted.[RowVersion]
INTO @messages
WHERE [RowVersion] IN (
    SELECT TOP (@P1) q.[RowVersion]
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
    ORDER BY q.[RowVersion]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires], [GroupKey], COALESCE([GroupPosition], [RowVersion]) AS [Place]
FROM @messages
ORDER BY [RowVersion];
