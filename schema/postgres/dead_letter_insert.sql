-- Inserts a dead letter unless one with the same MessageId exists (then it affects no row).
-- Parameters: 1 MessageId (uuid), 2 OriginalDestination (varchar), 3 Body (bytea), 4 DeliveryAttempts (integer)
INSERT INTO {schema}."NimbusDeadLetters" ("MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt")
VALUES ($1, $2, $3, $4, (now() AT TIME ZONE 'utc'))
ON CONFLICT ("MessageId") DO NOTHING
