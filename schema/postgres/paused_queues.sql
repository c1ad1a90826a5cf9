-- Creates NimbusPausedQueues where missing: the queues an operator paused. Every endpoint
-- that receives from a queue listed here stops taking its messages (sends still go in) until
-- the row is deleted; endpoints read the table once per peek delay.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusPausedQueues" (
    "Queue"    varchar(255) NOT NULL PRIMARY KEY,
    "PausedAt" timestamp    NOT NULL,
    "PausedBy" varchar(255) NOT NULL
)
