INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusDeadLetters" ("MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt")
VALUES ($1, $2, $3, $4, (now() AT TIME ZONE 'utc'))
ON CONFLICT ("MessageId") DO NOTHING