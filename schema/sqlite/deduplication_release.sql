-- Gives back a key claimed in this transaction (an inbox's id, when the attempt that claimed it
-- failed and its message is retried).
-- Parameters: 1 Scope (text), 2 Key (text)
DELETE FROM "NimbusDeduplication"
WHERE "Scope" = ?1 AND "Key" = ?2
