SELECT COUNT(*),
    CAST((julianday(MIN("ReadyAt")) - julianday('now')) * 86400000.0 AS INTEGER)
FROM "NimbusLimits"
WHERE "Scope" = ?1 AND "Slot" >= 0 AND "Slot" < ?2