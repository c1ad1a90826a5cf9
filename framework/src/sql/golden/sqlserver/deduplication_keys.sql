SELECT [Key]
FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication]
WHERE [Scope] = @P1 AND [ExpiresAt] > SYSUTCDATETIME()
ORDER BY [Key]