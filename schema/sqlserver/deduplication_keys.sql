-- Lists the keys of one scope still within their window, in key order (a bridge finds the way
-- back of a reply by the id of the message it answers: one key per scope).
-- Parameters: 1 Scope (nvarchar)
-- Returns: Key
SELECT [Key]
FROM {schema}.[NimbusDeduplication]
WHERE [Scope] = @P1 AND [ExpiresAt] > SYSUTCDATETIME()
ORDER BY [Key]
