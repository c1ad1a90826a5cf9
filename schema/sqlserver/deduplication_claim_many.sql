-- Claims several keys of one scope for a window in one statement, in the transaction of the
-- sends they guard (a bridge's batch): returns each key that was not seen within its window
-- (new, or its last claim expired); the others are duplicates. A claim racing another of the
-- same key waits for that transaction (UPDLOCK, HOLDLOCK); a server that ignores those hints
-- refuses the statement with a unique-key error instead, and the bridge then claims its keys
-- one at a time. The keys must be distinct.
-- Parameters: 1 Scope (nvarchar(400)), 2 the keys (nvarchar(max): a JSON array of strings), 3 window in ms (bigint)
-- Returns: Key of each key claimed
DECLARE @keys TABLE ([Key] nvarchar(255) NOT NULL);
DECLARE @claimed TABLE ([Key] nvarchar(255) NOT NULL);
INSERT INTO @keys ([Key]) SELECT listed.[value] FROM OPENJSON(@P2) AS listed;
DELETE FROM {schema}.[NimbusDeduplication] WITH (ROWLOCK)
WHERE [Scope] = @P1 AND [Key] IN (SELECT [Key] FROM @keys) AND [ExpiresAt] <= SYSUTCDATETIME();
INSERT INTO {schema}.[NimbusDeduplication] ([Scope], [Key], [ExpiresAt])
OUTPUT inserted.[Key] INTO @claimed
SELECT @P1, k.[Key], DATEADD(millisecond, @P3 % 1000, DATEADD(second, @P3 / 1000, SYSUTCDATETIME()))
FROM @keys AS k
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.[NimbusDeduplication] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Scope] = @P1 AND [Key] = k.[Key]);
SELECT [Key] FROM @claimed;
