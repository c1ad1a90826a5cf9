DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "NimbusMessages"
    WHERE "Destination" = ?1 AND "ExpiresAt" < strftime('%Y-%m-%d %H:%M:%f', 'now')
    LIMIT ?2)