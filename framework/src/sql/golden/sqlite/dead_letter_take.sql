DELETE FROM "NimbusDeadLetters"
WHERE "MessageId" = ?1
RETURNING "OriginalDestination", "Body"