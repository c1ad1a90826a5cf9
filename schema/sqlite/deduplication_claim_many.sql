-- Claims several keys of one scope for a window in one statement, in the transaction of the
-- sends they guard (a bridge's batch): returns each key that was not seen within its window
-- (new, or its last claim expired); the others are duplicates. The keys must be distinct.
-- Parameters: 1 Scope (text), 2 the keys (text: a JSON array of strings), 3 window in ms (integer)
-- Returns: Key of each key claimed
INSERT INTO "NimbusDeduplication" ("Scope", "Key", "ExpiresAt")
SELECT ?1, listed.value, strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds')
FROM json_each(?2) AS listed
WHERE true
ON CONFLICT ("Scope", "Key") DO UPDATE SET "ExpiresAt" = excluded."ExpiresAt"
WHERE "NimbusDeduplication"."ExpiresAt" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
RETURNING "Key"
