-- Pauses a queue; affects no row when it is paused already (the first pause's time and author
-- stay).
-- Parameters: 1 Queue (varchar), 2 PausedBy (varchar: who paused it, for operators)
INSERT INTO {schema}."NimbusPausedQueues" ("Queue", "PausedAt", "PausedBy")
VALUES ($1, (now() AT TIME ZONE 'utc'), $2)
ON CONFLICT ("Queue") DO NOTHING
