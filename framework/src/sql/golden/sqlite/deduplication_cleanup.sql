DELETE FROM "NimbusDeduplication"
WHERE rowid IN (
    SELECT rowid FROM "NimbusDeduplication"
    WHERE "ExpiresAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)