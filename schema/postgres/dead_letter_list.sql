-- Lists dead letters, oldest FailedAt first (MessageId breaks ties), without removing them: one
-- page, filtered in the statement, so a filter finds its matches however many others there are.
-- Parameters: 1 only this OriginalDestination (text or NULL), 2 failed at or before (timestamp or
-- NULL), 3 failed at or after (timestamp or NULL), 4 and 5 the page starts after this FailedAt
-- (timestamp or NULL for the first page) and MessageId (uuid), 6 max rows (bigint)
-- Returns: MessageId (text), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT "MessageId"::text AS "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM {schema}."NimbusDeadLetters"
WHERE ($1::text IS NULL OR "OriginalDestination" = $1)
    AND ($2::timestamp IS NULL OR "FailedAt" <= $2)
    AND ($3::timestamp IS NULL OR "FailedAt" >= $3)
    AND ($4::timestamp IS NULL OR ("FailedAt", "MessageId") > ($4, $5::uuid))
ORDER BY "FailedAt", "MessageId"
LIMIT $6
