-- Moves the due time of a delayed message still waiting in NimbusDelayedMessages: 1 row when it was pending, 0 when it was delivered or never existed.
-- Parameters: 1 Id (text), 2 delay in ms from now (integer, NULL for none), 3 absolute due time (text UTC, NULL for none; wins over 2)
UPDATE "NimbusDelayedMessages"
SET "Due" = COALESCE(?3, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?2, 0) / 1000.0) || ' seconds'))
WHERE "Id" = ?1
