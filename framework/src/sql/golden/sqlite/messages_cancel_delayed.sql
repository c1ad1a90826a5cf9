DELETE FROM "NimbusMessages"
WHERE "MessageId" = ?1 AND "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')