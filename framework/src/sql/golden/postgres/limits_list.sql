SELECT "Scope",
    COUNT(*) FILTER (WHERE "Slot" >= 0),
    COUNT(*) FILTER (WHERE "Slot" >= 0 AND "ReadyAt" > (now() AT TIME ZONE 'utc')),
    MAX("ReadyAt") FILTER (WHERE "Slot" >= 0),
    COALESCE(SUM("Held"), 0)::bigint,
    MAX("ReadyAt") FILTER (WHERE "Slot" = -1 AND "Held" > 0)
FROM "Zeb]ra ""x"" 'y'"."NimbusLimits"
GROUP BY "Scope"
ORDER BY "Scope"