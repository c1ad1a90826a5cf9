-- Reads a body stored apart, for the handlers of its message, in the receive's transaction:
-- the bytes (NULL when in an object store), and where else it is (NULL when here).
-- Returns: Body (NULL when in an object store), Store (NULL when here)
-- Parameters: 1 Id (uuid)
SELECT "Body", "Store" FROM {schema}."NimbusBodies" WHERE "Id" = $1
