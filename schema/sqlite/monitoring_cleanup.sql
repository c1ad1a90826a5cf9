-- Deletes at most a batch of monitoring reports written longer ago than the retention period
-- (database time).
-- Parameters: 1 the retention period in seconds (integer), 2 batch size (integer)
DELETE FROM "NimbusMonitoring"
WHERE rowid IN (
    SELECT rowid FROM "NimbusMonitoring"
    WHERE "ReportedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)
