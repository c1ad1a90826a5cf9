INSERT INTO "NimbusDeduplication" ("Scope", "Key", "ExpiresAt")
SELECT ?1, listed.value, strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds')
FROM json_each(?2) AS listed
WHERE true
ON CONFLICT ("Scope", "Key") DO UPDATE SET "ExpiresAt" = excluded."ExpiresAt"
WHERE "NimbusDeduplication"."ExpiresAt" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
RETURNING "Key"