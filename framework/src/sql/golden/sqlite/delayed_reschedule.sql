UPDATE "NimbusDelayedMessages"
SET "Due" = COALESCE(?3, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?2, 0) / 1000.0) || ' seconds'))
WHERE "Id" = ?1