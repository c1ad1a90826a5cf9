SELECT "MessageId", "Body", "VisibleAfter", "ExpiresAt"
FROM "NimbusMessages"
WHERE "Destination" = ?1
ORDER BY "VisibleAfter", "MessageId"
LIMIT ?2