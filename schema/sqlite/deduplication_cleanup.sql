-- Deletes at most a batch of keys whose window ended longer ago than the given seconds
-- (database time).
-- Parameters: 1 seconds past the end of the window (integer), 2 batch size (integer)
DELETE FROM "NimbusDeduplication"
WHERE rowid IN (
    SELECT rowid FROM "NimbusDeduplication"
    WHERE "ExpiresAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)
