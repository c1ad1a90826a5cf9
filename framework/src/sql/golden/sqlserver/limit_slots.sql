INSERT INTO [Zeb]]ra "x" 'y'].[NimbusLimits] ([Scope], [Slot], [ReadyAt])
SELECT @P1, [n].[Slot], DATEADD(second, -1, SYSUTCDATETIME())
FROM (
    SELECT [ones].[d] + 10 * [tens].[d] + 100 * [hundreds].[d] - 1 AS [Slot]
    FROM (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS [ones] ([d])
    CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS [tens] ([d])
    CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)) AS [hundreds] ([d])
) AS [n]
WHERE [n].[Slot] < @P2
  AND NOT EXISTS (
      SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusLimits] AS [have] WITH (NOLOCK)
      WHERE [have].[Scope] = @P1 AND [have].[Slot] = [n].[Slot]);