-- Claims a key in a scope for a window, in the transaction of the send or receive it guards:
-- 1 row when the key was not seen within its window (new, or its last claim expired), 0 when
-- it was (a duplicate).
-- Parameters: 1 Scope (text), 2 Key (text), 3 window in ms (integer)
INSERT INTO "NimbusDeduplication" ("Scope", "Key", "ExpiresAt")
VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds'))
ON CONFLICT ("Scope", "Key") DO UPDATE SET "ExpiresAt" = excluded."ExpiresAt"
WHERE "NimbusDeduplication"."ExpiresAt" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
