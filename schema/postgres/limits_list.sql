-- Every limit's scope with its slots, how many of them a rate has taken within its period,
-- when a slot was last taken or held, and how many messages it held back.
-- Parameters: none
-- Returns: Scope, Slots (bigint), Taken (bigint), LastTaken, Held (bigint), LastHeld
SELECT "Scope",
    COUNT(*) FILTER (WHERE "Slot" >= 0),
    COUNT(*) FILTER (WHERE "Slot" >= 0 AND "ReadyAt" > (now() AT TIME ZONE 'utc')),
    MAX("ReadyAt") FILTER (WHERE "Slot" >= 0),
    COALESCE(SUM("Held"), 0)::bigint,
    MAX("ReadyAt") FILTER (WHERE "Slot" = -1 AND "Held" > 0)
FROM {schema}."NimbusLimits"
GROUP BY "Scope"
ORDER BY "Scope"
