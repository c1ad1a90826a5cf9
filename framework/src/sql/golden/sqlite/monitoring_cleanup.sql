DELETE FROM "NimbusMonitoring"
WHERE rowid IN (
    SELECT rowid FROM "NimbusMonitoring"
    WHERE "ReportedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)