-- Deletes a completed saga instance if it is still at the version it was read at; affects no
-- row when another change came first.
-- Parameters: 1 Id (text), 2 Version read (integer)
DELETE FROM "NimbusSagas"
WHERE "Id" = ?1 AND "Version" = ?2
