-- Deletes a completed saga instance if it is still at the version it was read at; affects no
-- row when another change came first.
-- Parameters: 1 Id (uuid), 2 Version read (bigint)
DELETE FROM {schema}."NimbusSagas"
WHERE "Id" = $1 AND "Version" = $2
