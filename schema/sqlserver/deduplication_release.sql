-- Gives back a key claimed in this transaction (an inbox's id, when the attempt that claimed it
-- failed and its message is retried).
-- Parameters: 1 Scope (nvarchar(400)), 2 Key (nvarchar(255))
DELETE FROM {schema}.[NimbusDeduplication] WITH (ROWLOCK)
WHERE [Scope] = @P1 AND [Key] = @P2;
