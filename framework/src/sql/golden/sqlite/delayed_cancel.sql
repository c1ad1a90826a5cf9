DELETE FROM "NimbusDelayedMessages"
WHERE "Id" = ?1