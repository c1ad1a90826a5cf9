SELECT [Scope], CAST(COUNT(*) AS bigint), MIN([ExpiresAt])
FROM [Zeb]]ra "x" 'y'].[NimbusDeduplication]
WHERE [ExpiresAt] > SYSUTCDATETIME()
GROUP BY [Scope]
ORDER BY [Scope];