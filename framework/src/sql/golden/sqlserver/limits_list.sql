SELECT [Scope],
    CAST(SUM(CASE WHEN [Slot] >= 0 THEN 1 ELSE 0 END) AS bigint),
    CAST(SUM(CASE WHEN [Slot] >= 0 AND [ReadyAt] > SYSUTCDATETIME() THEN 1 ELSE 0 END) AS bigint),
    MAX(CASE WHEN [Slot] >= 0 THEN [ReadyAt] END),
    CAST(SUM([Held]) AS bigint),
    MAX(CASE WHEN [Slot] = -1 AND [Held] > 0 THEN [ReadyAt] END)
FROM [Zeb]]ra "x" 'y'].[NimbusLimits] WITH (NOLOCK)
GROUP BY [Scope]
ORDER BY [Scope];