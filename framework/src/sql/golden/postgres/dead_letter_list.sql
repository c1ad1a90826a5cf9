SELECT "MessageId"::text AS "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
WHERE ($1::text IS NULL OR "OriginalDestination" = $1)
    AND ($2::timestamp IS NULL OR "FailedAt" <= $2)
    AND ($3::timestamp IS NULL OR "FailedAt" >= $3)
    AND ($4::timestamp IS NULL OR ("FailedAt", "MessageId") > ($4, $5::uuid))
ORDER BY "FailedAt", "MessageId"
LIMIT $6