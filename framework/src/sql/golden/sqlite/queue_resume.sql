DELETE FROM "NimbusPausedQueues"
WHERE "Queue" = ?1