-- Adds the slots a limit lacks (0 to slots - 1, ready at once; at most 1,000) and its row of
-- held messages (slot -1). Another transaction adding the same slots makes this statement fail
-- with a duplicate key, which ends this statement alone: its slots are there.
-- Parameters: 1 Scope (nvarchar(400)), 2 slots (bigint)
INSERT INTO {schema}.[NimbusLimits] ([Scope], [Slot], [ReadyAt])
SELECT @P1, [n].[Slot], DATEADD(second, -1, SYSUTCDATETIME())
FROM (
    SELECT [ones].[d] + 10 * [tens].[d] + 100 * [hundreds].[d] - 1 AS [Slot]
    FROM (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS [ones] ([d])
    CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS [tens] ([d])
    CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)) AS [hundreds] ([d])
) AS [n]
WHERE [n].[Slot] < @P2
  AND NOT EXISTS (
      SELECT 1 FROM {schema}.[NimbusLimits] AS [have] WITH (NOLOCK)
      WHERE [have].[Scope] = @P1 AND [have].[Slot] = [n].[Slot]);
