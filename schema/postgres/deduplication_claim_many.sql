-- Claims several keys of one scope for a window in one statement, in the transaction of the
-- sends they guard (a bridge's batch): returns each key that was not seen within its window;
-- the others are duplicates. Run after deduplication_expire_many.sql, which deletes the keys
-- whose window ended (Citus refuses a parameter in the ON CONFLICT clause of an INSERT ...
-- SELECT, so the expired ones are not taken over here). A claim racing another of the same key
-- waits for that transaction. The keys must be distinct; the scope is cast, as Citus plans the
-- SELECT apart from its target.
-- Parameters: 1 Scope (varchar), 2 the keys (text: a JSON array of strings), 3 window in ms (bigint)
-- Returns: Key of each key claimed
INSERT INTO {schema}."NimbusDeduplication" AS seen ("Scope", "Key", "ExpiresAt")
SELECT CAST($1 AS text), listed.value, (now() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond'
FROM json_array_elements_text(CAST($2::text AS json)) AS listed
ON CONFLICT ("Scope", "Key") DO NOTHING
RETURNING seen."Key"
