SELECT "Key"
FROM "Zeb]ra ""x"" 'y'"."NimbusDeduplication"
WHERE "Scope" = $1 AND "ExpiresAt" > (now() AT TIME ZONE 'utc')
ORDER BY "Key"