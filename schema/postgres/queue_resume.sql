-- Resumes a paused queue; affects no row when it was not paused.
-- Parameters: 1 Queue (varchar)
DELETE FROM {schema}."NimbusPausedQueues"
WHERE "Queue" = $1
