DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication] WITH (ROWLOCK)
WHERE [Scope] = @P1 AND [Key] = @P2;