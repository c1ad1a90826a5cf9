-- Writes one queue's report of a running bus for the period that just ended, stamped with the
-- database's time (repeated, one VALUES tuple per queue, to write all of a report in one
-- statement).
-- Parameters: 1 RunId (uuid), 2 Queue, 3 Application, 4 Instance (varchar), 5 PeriodMs,
-- 6 Handled, 7 Failed, 8 Retried, 9 DeadLettered, 10 QueueLength (bigint), 11 ProcessingP50Us,
-- 12 ProcessingP95Us, 13 CriticalP50Us, 14 CriticalP95Us (bigint, microseconds), 15 ProcessingTimes,
-- 16 CriticalTimes (text)
INSERT INTO {schema}."NimbusMonitoring" ("ReportedAt", "RunId", "Queue", "Application",
    "Instance", "PeriodMs", "Handled", "Failed", "Retried", "DeadLettered", "QueueLength",
    "ProcessingP50Us", "ProcessingP95Us", "CriticalP50Us", "CriticalP95Us", "ProcessingTimes",
    "CriticalTimes")
VALUES ((now() AT TIME ZONE 'utc'), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
