-- Deletes and returns the visible message of a destination with the highest Priority, the first
-- of those by VisibleAfter then MessageId, that no other transaction holds (shared-table layout).
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: MessageId, CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (bit, by database time), ExpiresAt
-- The form of messages_receive.sql, ordered by Priority first.
DECLARE @message TABLE (
    [MessageId] uniqueidentifier NULL,
    [Body]      varbinary(max)   NULL,
    [ExpiresAt] datetime2        NULL
);
DELETE FROM {schema}.[NimbusMessages] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[MessageId], deleted.[Body], deleted.[ExpiresAt]
INTO @message
WHERE [MessageId] = (
    SELECT TOP (1) [MessageId]
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
FROM @message;
