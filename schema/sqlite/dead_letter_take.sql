-- Deletes one dead letter and returns what is needed to replay it.
-- Parameters: 1 MessageId (text)
-- Returns: OriginalDestination, Body
DELETE FROM "NimbusDeadLetters"
WHERE "MessageId" = ?1
RETURNING "OriginalDestination", "Body"
