INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusPausedQueues" ("Queue", "PausedAt", "PausedBy")
VALUES ($1, (now() AT TIME ZONE 'utc'), $2)
ON CONFLICT ("Queue") DO NOTHING