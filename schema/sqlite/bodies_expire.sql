-- Deletes at most a batch of bodies stored apart whose message expired longer ago than the
-- given seconds (database time): their messages are gone, or are discarded unread.
-- Parameters: 1 seconds (integer), 2 batch size (integer)
DELETE FROM "NimbusBodies"
WHERE "Id" IN (
    SELECT "Id" FROM "NimbusBodies"
    WHERE "Expires" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)
