-- Deletes the bodies stored apart for the messages of a queue being dropped (a stopped
-- instance's own queue), except its dead letters'.
-- Parameters: 1 Queue (nvarchar(255))
DELETE FROM {schema}.[NimbusBodies] WHERE [Queue] = @P1 AND [DeadLetteredAt] IS NULL;
