-- Deletes one dead letter and returns what is needed to replay it.
-- Parameters: 1 MessageId (uuid)
-- Returns: OriginalDestination, Body
DELETE FROM {schema}."NimbusDeadLetters"
WHERE "MessageId" = $1
RETURNING "OriginalDestination", "Body"
