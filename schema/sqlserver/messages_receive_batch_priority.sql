-- Deletes and returns up to N visible messages of a destination from NimbusMessages
-- (shared-table layout) that no other transaction holds, the highest Priority first, then by
-- VisibleAfter and MessageId (a batched receive).
-- Parameters: 1 Destination (nvarchar(255)), 2 at most this many rows (bigint)
-- Returns: MessageId, CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (bit, by database time), ExpiresAt; highest Priority first, then in VisibleAfter, MessageId order
-- The form of messages_receive_batch.sql, ordered by Priority first.
DECLARE @messages TABLE (
    [MessageId]    uniqueidentifier NOT NULL,
    [Body]         varbinary(max)   NULL,
    [ExpiresAt]    datetime2        NULL,
    [VisibleAfter] datetime2        NOT NULL,
    [Priority]     smallint         NOT NULL
);
DELETE FROM {schema}.[NimbusMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt], deleted.[VisibleAfter],
    deleted.[Priority]
INTO @messages
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId]
    FROM {schema}.[NimbusMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()
    ORDER BY [Priority] DESC, [VisibleAfter], [MessageId]);
SELECT [MessageId], CAST(NULL AS varchar(255)) AS [CorrelationId],
    CAST(NULL AS varchar(255)) AS [ReplyToAddress], CAST(NULL AS nvarchar(max)) AS [Headers],
    [Body],
    CAST(CASE WHEN [ExpiresAt] IS NULL THEN 0
              WHEN [ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [ExpiresAt]
FROM @messages
ORDER BY [Priority] DESC, [VisibleAfter], [MessageId];
