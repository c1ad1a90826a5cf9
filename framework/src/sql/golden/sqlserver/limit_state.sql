SELECT CAST(COUNT(*) AS bigint),
    CAST(DATEDIFF(millisecond, SYSUTCDATETIME(), MIN([ReadyAt])) AS bigint)
FROM [Zeb]]ra "x" 'y'].[NimbusLimits] WITH (NOLOCK)
WHERE [Scope] = @P1 AND [Slot] >= 0 AND [Slot] < @P2;