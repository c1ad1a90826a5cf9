INSERT INTO "NimbusPausedQueues" ("Queue", "PausedAt", "PausedBy")
VALUES (?1, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?2)
ON CONFLICT ("Queue") DO NOTHING