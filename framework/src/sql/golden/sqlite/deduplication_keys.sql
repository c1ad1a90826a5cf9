SELECT "Key"
FROM "NimbusDeduplication"
WHERE "Scope" = ?1 AND "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now')
ORDER BY "Key"