-- Deletes the bodies stored apart for the messages of a queue being dropped (a stopped
-- instance's own queue), except its dead letters'.
-- Parameters: 1 Queue (text)
DELETE FROM "NimbusBodies" WHERE "Queue" = ?1 AND "DeadLetteredAt" IS NULL
