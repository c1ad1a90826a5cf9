UPDATE "NimbusLimits"
SET "ReadyAt" = strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds')
WHERE rowid = (
    SELECT rowid FROM "NimbusLimits"
    WHERE "Scope" = ?1 AND "Slot" >= 0 AND "Slot" < ?2
      AND "ReadyAt" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "ReadyAt"
    LIMIT 1)
RETURNING "Slot"