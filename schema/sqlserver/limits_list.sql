-- Every limit's scope with its slots, how many of them a rate has taken within its period,
-- when a slot was last taken or held, and how many messages it held back.
-- Parameters: none
-- Returns: Scope, Slots (bigint), Taken (bigint), LastTaken, Held (bigint), LastHeld
SELECT [Scope],
    CAST(SUM(CASE WHEN [Slot] >= 0 THEN 1 ELSE 0 END) AS bigint),
    CAST(SUM(CASE WHEN [Slot] >= 0 AND [ReadyAt] > SYSUTCDATETIME() THEN 1 ELSE 0 END) AS bigint),
    MAX(CASE WHEN [Slot] >= 0 THEN [ReadyAt] END),
    CAST(SUM([Held]) AS bigint),
    MAX(CASE WHEN [Slot] = -1 AND [Held] > 0 THEN [ReadyAt] END)
FROM {schema}.[NimbusLimits] WITH (NOLOCK)
GROUP BY [Scope]
ORDER BY [Scope];
