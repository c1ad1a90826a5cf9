-- Lists dead letters, oldest FailedAt first (MessageId breaks ties), without removing them: one
-- page, filtered in the statement, so a filter finds its matches however many others there are.
-- Parameters: 1 only this OriginalDestination (text or NULL), 2 failed at or before (text time or
-- NULL), 3 failed at or after (text time or NULL), 4 and 5 the page starts after this FailedAt
-- (NULL for the first page) and MessageId (text), 6 max rows (integer)
-- Returns: MessageId (text), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "NimbusDeadLetters"
WHERE (?1 IS NULL OR "OriginalDestination" = ?1)
    AND (?2 IS NULL OR "FailedAt" <= ?2)
    AND (?3 IS NULL OR "FailedAt" >= ?3)
    AND (?4 IS NULL OR "FailedAt" > ?4 OR ("FailedAt" = ?4 AND "MessageId" > ?5))
ORDER BY "FailedAt", "MessageId"
LIMIT ?6
