-- Deletes the rows of buses not seen (stopped, or silent) for the given time, by database time.
-- Parameters: 1 how long in seconds (integer)
DELETE FROM "NimbusInstances"
WHERE "LastSeenAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
