-- Resumes a paused queue; affects no row when it was not paused.
-- Parameters: 1 Queue (nvarchar(255))
DELETE FROM {schema}.[NimbusPausedQueues]
WHERE [Queue] = @P1;
