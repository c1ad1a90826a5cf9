-- Every limit's scope with its slots, how many of them a rate has taken within its period,
-- when a slot was last taken or held, and how many messages it held back.
-- Parameters: none
-- Returns: Scope, Slots (integer), Taken (integer), LastTaken, Held (integer), LastHeld
SELECT "Scope",
    SUM(CASE WHEN "Slot" >= 0 THEN 1 ELSE 0 END),
    SUM(CASE WHEN "Slot" >= 0 AND "ReadyAt" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 1 ELSE 0 END),
    MAX(CASE WHEN "Slot" >= 0 THEN "ReadyAt" END),
    SUM("Held"),
    MAX(CASE WHEN "Slot" = -1 AND "Held" > 0 THEN "ReadyAt" END)
FROM "NimbusLimits"
GROUP BY "Scope"
ORDER BY "Scope"
