DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication] WITH (ROWLOCK)
WHERE [Scope] = @P1 AND [Key] = @P2 AND [ExpiresAt] <= SYSUTCDATETIME();
INSERT INTO [Zeb]]ra "x" 'y'].[NimbusDeduplication] ([Scope], [Key], [ExpiresAt])
SELECT @P1, @P2, DATEADD(millisecond, @P3 % 1000, DATEADD(second, @P3 / 1000, SYSUTCDATETIME()))
WHERE NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Scope] = @P1 AND [Key] = @P2);