-- Lists the paused queues, with when and by whom each was paused.
-- Parameters: none
-- Returns: Queue, PausedAt, PausedBy
SELECT "Queue", "PausedAt", "PausedBy"
FROM "NimbusPausedQueues"
ORDER BY "Queue"
