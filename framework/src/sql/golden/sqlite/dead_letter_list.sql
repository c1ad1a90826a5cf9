SELECT "MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt"
FROM "NimbusDeadLetters"
WHERE (?1 IS NULL OR "OriginalDestination" = ?1)
    AND (?2 IS NULL OR "FailedAt" <= ?2)
    AND (?3 IS NULL OR "FailedAt" >= ?3)
    AND (?4 IS NULL OR "FailedAt" > ?4 OR ("FailedAt" = ?4 AND "MessageId" > ?5))
ORDER BY "FailedAt", "MessageId"
LIMIT ?6