SELECT "MessageId"::text AS "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
WHERE "MessageId" = $1