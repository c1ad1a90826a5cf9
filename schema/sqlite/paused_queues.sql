-- Creates NimbusPausedQueues where missing: the queues an operator paused. Every endpoint
-- that receives from a queue listed here stops taking its messages (sends still go in) until
-- the row is deleted; endpoints read the table once per peek delay.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusPausedQueues" (
    "Queue"    TEXT NOT NULL PRIMARY KEY,
    "PausedAt" TEXT NOT NULL,
    "PausedBy" TEXT NOT NULL
)
