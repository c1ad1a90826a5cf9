-- Deletes at most a batch of bodies stored apart whose dead letter failed longer ago than the
-- retention period (database time), as the dead letters past it are.
-- Parameters: 1 seconds (integer), 2 batch size (integer)
DELETE FROM "NimbusBodies"
WHERE "Id" IN (
    SELECT "Id" FROM "NimbusBodies"
    WHERE "DeadLetteredAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)
