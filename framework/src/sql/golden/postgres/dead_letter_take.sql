-- Deletes one dead letter and returns what is needed to replay it.
-- Parameters: 1 MessageId (uuid)
-- Returns: OriginalDestination, Body
DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
WHERE "MessageId" = $1
RETURNING "OriginalDestination", "Body"
