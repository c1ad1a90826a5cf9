-- Lists dead letters, oldest FailedAt first (MessageId breaks ties), without removing them: one
-- page, filtered in the statement, so a filter finds its matches however many others there are.
-- The page's start is compared as the ORDER BY orders (uniqueidentifier order for MessageId).
-- Parameters: 1 only this OriginalDestination (nvarchar or NULL), 2 failed at or before
-- (datetime2 or NULL), 3 failed at or after (datetime2 or NULL), 4 and 5 the page starts after
-- this FailedAt (NULL for the first page) and MessageId (uniqueidentifier), 6 max rows (bigint)
-- Returns: MessageId (uniqueidentifier), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT TOP (@P6) [MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt]
FROM {schema}.[NimbusDeadLetters]
WHERE (@P1 IS NULL OR [OriginalDestination] = @P1)
    AND (@P2 IS NULL OR [FailedAt] <= @P2)
    AND (@P3 IS NULL OR [FailedAt] >= @P3)
    AND (@P4 IS NULL OR [FailedAt] > @P4 OR ([FailedAt] = @P4 AND [MessageId] > @P5))
ORDER BY [FailedAt], [MessageId];
