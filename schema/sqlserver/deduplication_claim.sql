-- Claims a key in a scope for a window, in the transaction of the send or receive it guards:
-- rows when the key was not seen within its window (its expired claim deleted, a new one
-- inserted), none when it was (a duplicate). A claim racing another of the same key waits for
-- that transaction (the key's range lock).
-- Parameters: 1 Scope (nvarchar(400)), 2 Key (nvarchar(255)), 3 window in ms (bigint)
DELETE FROM {schema}.[NimbusDeduplication] WITH (ROWLOCK)
WHERE [Scope] = @P1 AND [Key] = @P2 AND [ExpiresAt] <= SYSUTCDATETIME();
INSERT INTO {schema}.[NimbusDeduplication] ([Scope], [Key], [ExpiresAt])
SELECT @P1, @P2, DATEADD(millisecond, @P3 % 1000, DATEADD(second, @P3 / 1000, SYSUTCDATETIME()))
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.[NimbusDeduplication] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Scope] = @P1 AND [Key] = @P2);
