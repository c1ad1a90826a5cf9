SELECT "Scope", COUNT(*), MIN("ExpiresAt")
FROM "NimbusDeduplication"
WHERE "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now')
GROUP BY "Scope"
ORDER BY "Scope"