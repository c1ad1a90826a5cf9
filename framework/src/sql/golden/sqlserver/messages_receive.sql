-- Deletes and returns the first visible message of a destination (VisibleAfter, then MessageId) that no other transaction holds.
-- Parameters: 1 Destination (nvarchar(255))
-- Returns: MessageId, CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (bit, by database time), ExpiresAt
WITH message AS (
    SELECT TOP (1) *
    FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()
    ORDER BY [VisibleAfter], [MessageId])
DELETE FROM message
OUTPUT deleted.[MessageId], CAST(NULL AS varchar(255)), CAST(NULL AS varchar(255)),
    CAST(NULL AS nvarchar(max)), deleted.[Body],
    CAST(CASE WHEN deleted.[ExpiresAt] IS NULL THEN 0
              WHEN deleted.[ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    deleted.[ExpiresAt];
