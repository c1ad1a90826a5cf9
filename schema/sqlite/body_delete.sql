-- Deletes a body stored apart, in the transaction that removes the last row of its message
-- (handled, or discarded).
-- Parameters: 1 Id (text)
DELETE FROM "NimbusBodies" WHERE "Id" = ?1
