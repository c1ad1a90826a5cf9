-- Lists the keys of one scope still within their window, in key order (a bridge finds the way
-- back of a reply by the id of the message it answers: one key per scope).
-- Parameters: 1 Scope (varchar)
-- Returns: Key
SELECT "Key"
FROM {schema}."NimbusDeduplication"
WHERE "Scope" = $1 AND "ExpiresAt" > (now() AT TIME ZONE 'utc')
ORDER BY "Key"
