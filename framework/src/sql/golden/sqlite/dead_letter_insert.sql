INSERT INTO "NimbusDeadLetters" ("MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt")
VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT ("MessageId") DO NOTHING