-- Inserts a dead letter unless one with the same MessageId exists (then it affects no row).
-- Parameters: 1 MessageId (text), 2 OriginalDestination (text), 3 Body (blob), 4 DeliveryAttempts (integer)
INSERT INTO "NimbusDeadLetters" ("MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt")
VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT ("MessageId") DO NOTHING
