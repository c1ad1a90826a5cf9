-- Gives a body stored apart back to its message, replayed from the dead letters to a queue, in
-- the replay's transaction.
-- Parameters: 1 Id (text), 2 Queue (text)
UPDATE "NimbusBodies" SET "DeadLetteredAt" = NULL, "Queue" = ?2 WHERE "Id" = ?1
