DECLARE @keys TABLE ([Key] nvarchar(255) NOT NULL);
DECLARE @claimed TABLE ([Key] nvarchar(255) NOT NULL);
INSERT INTO @keys ([Key]) SELECT listed.[value] FROM OPENJSON(@P2) AS listed;
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication] WITH (ROWLOCK)
WHERE [Scope] = @P1 AND [Key] IN (SELECT [Key] FROM @keys) AND [ExpiresAt] <= SYSUTCDATETIME();
INSERT INTO [Zeb]]ra "x" 'y'].[NimbusDeduplication] ([Scope], [Key], [ExpiresAt])
OUTPUT inserted.[Key] INTO @claimed
SELECT @P1, k.[Key], DATEADD(millisecond, @P3 % 1000, DATEADD(second, @P3 / 1000, SYSUTCDATETIME()))
FROM @keys AS k
WHERE NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Scope] = @P1 AND [Key] = k.[Key]);
SELECT [Key] FROM @claimed;