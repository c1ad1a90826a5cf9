SELECT "Queue", "PausedAt", "PausedBy"
FROM "NimbusPausedQueues"
ORDER BY "Queue"