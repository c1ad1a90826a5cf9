-- Marks a saga instance completed, with its last state, if it is still at the version it was
-- read at: it stays (for messages that arrive late to find it completed) until
-- saga_cleanup.sql deletes it; affects no row when another change came first.
-- Parameters: 1 Id (text), 2 Version read (integer), 3 State (text: JSON)
UPDATE "NimbusSagas"
SET "State" = ?3, "Version" = "Version" + 1,
    "UpdatedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    "CompletedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Id" = ?1 AND "Version" = ?2
