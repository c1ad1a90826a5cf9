-- Gives a body stored apart back to its message, replayed from the dead letters to a queue, in
-- the replay's transaction.
-- Parameters: 1 Id (uuid), 2 Queue (varchar)
UPDATE {schema}."NimbusBodies" SET "DeadLetteredAt" = NULL, "Queue" = $2 WHERE "Id" = $1
