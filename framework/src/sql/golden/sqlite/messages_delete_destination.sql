DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "NimbusMessages"
    WHERE "Destination" = ?1
    LIMIT ?2)