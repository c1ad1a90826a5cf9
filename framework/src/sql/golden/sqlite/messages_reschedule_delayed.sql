UPDATE "NimbusMessages"
SET "VisibleAfter" = COALESCE(?3, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?2, 0) / 1000.0) || ' seconds'))
WHERE "MessageId" = ?1 AND "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')