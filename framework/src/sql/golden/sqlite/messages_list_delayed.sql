SELECT "MessageId", "Destination", "VisibleAfter", "Body"
FROM "NimbusMessages"
WHERE "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')
ORDER BY "VisibleAfter", "MessageId"
LIMIT ?1