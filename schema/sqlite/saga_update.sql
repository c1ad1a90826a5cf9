-- Writes a saga instance's new state if it is still at the version it was read at, and moves
-- it to the next version; affects no row when another change came first.
-- Parameters: 1 Id (text), 2 Version read (integer), 3 State (text: JSON)
UPDATE "NimbusSagas"
SET "State" = ?3, "Version" = "Version" + 1, "UpdatedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Id" = ?1 AND "Version" = ?2
