-- Pauses a queue; affects no row when it is paused already (the first pause's time and author
-- stay).
-- Parameters: 1 Queue (text), 2 PausedBy (text: who paused it, for operators)
INSERT INTO "NimbusPausedQueues" ("Queue", "PausedAt", "PausedBy")
VALUES (?1, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?2)
ON CONFLICT ("Queue") DO NOTHING
