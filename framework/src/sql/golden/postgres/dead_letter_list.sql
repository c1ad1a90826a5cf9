SELECT "MessageId"::text AS "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
ORDER BY "FailedAt", "MessageId"
LIMIT $1