SELECT "Scope", COUNT(*), MIN("ExpiresAt")
FROM "Zeb]ra ""x"" 'y'"."NimbusDeduplication"
WHERE "ExpiresAt" > (now() AT TIME ZONE 'utc')
GROUP BY "Scope"
ORDER BY "Scope"