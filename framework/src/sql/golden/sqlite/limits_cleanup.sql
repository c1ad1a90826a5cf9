DELETE FROM "NimbusLimits"
WHERE rowid IN (
    SELECT rowid FROM "NimbusLimits"
    WHERE "ReadyAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)