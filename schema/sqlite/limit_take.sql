-- Takes a free slot of a limit in the receive's transaction (which holds the file's write
-- lock): one whose ReadyAt has passed; it is taken again only after the period. No row when
-- every slot is taken (the limit is full).
-- Parameters: 1 Scope (text), 2 slots (integer), 3 period in ms (integer: 0 for a limit of
-- handlers at once)
-- Returns: Slot
UPDATE "NimbusLimits"
SET "ReadyAt" = strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds')
WHERE rowid = (
    SELECT rowid FROM "NimbusLimits"
    WHERE "Scope" = ?1 AND "Slot" >= 0 AND "Slot" < ?2
      AND "ReadyAt" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "ReadyAt"
    LIMIT 1)
RETURNING "Slot"
