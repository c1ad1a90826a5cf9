-- Resumes a paused queue; affects no row when it was not paused.
-- Parameters: 1 Queue (text)
DELETE FROM "NimbusPausedQueues"
WHERE "Queue" = ?1
