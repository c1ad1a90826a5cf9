-- Deletes a body stored apart, in the transaction that removes the last row of its message
-- (handled, or discarded).
-- Parameters: 1 Id (uuid)
DELETE FROM {schema}."NimbusBodies" WHERE "Id" = $1
