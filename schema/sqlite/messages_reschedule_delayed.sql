-- Moves the VisibleAfter of a delayed message of the shared-table layout while it is not yet visible: 1 row when it was pending, 0 when it was visible already or never existed.
-- Parameters: 1 MessageId (text), 2 delay in ms from now (integer, NULL for none), 3 absolute time (text UTC, NULL for none; wins over 2)
UPDATE "NimbusMessages"
SET "VisibleAfter" = COALESCE(?3, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?2, 0) / 1000.0) || ' seconds'))
WHERE "MessageId" = ?1 AND "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')
