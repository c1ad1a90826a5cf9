INSERT INTO "NimbusDeduplication" ("Scope", "Key", "ExpiresAt")
VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds'))
ON CONFLICT ("Scope", "Key") DO UPDATE SET "ExpiresAt" = excluded."ExpiresAt"
WHERE "NimbusDeduplication"."ExpiresAt" <= strftime('%Y-%m-%d %H:%M:%f', 'now')