-- Creates NimbusMonitoring where missing: what every running bus handled per queue in each
-- report period (counts, processing and critical times, queue length), written by the bus
-- itself every `monitoring_interval`, so one console draws the charts of all instances without
-- scraping any of them. Keyed by time first: charts read, and the cleanup deletes, a time range.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusMonitoring" (
    "ReportedAt"      TEXT    NOT NULL,
    "RunId"           TEXT    NOT NULL,
    "Queue"           TEXT    NOT NULL,
    "Application"     TEXT    NOT NULL,
    "Instance"        TEXT    NOT NULL,
    "PeriodMs"        INTEGER NOT NULL,
    "Handled"         INTEGER NOT NULL,
    "Failed"          INTEGER NOT NULL,
    "Retried"         INTEGER NOT NULL,
    "DeadLettered"    INTEGER NOT NULL,
    "QueueLength"     INTEGER NULL,
    "ProcessingP50Us" INTEGER NULL,
    "ProcessingP95Us" INTEGER NULL,
    "CriticalP50Us"   INTEGER NULL,
    "CriticalP95Us"   INTEGER NULL,
    "ProcessingTimes" TEXT    NULL,
    "CriticalTimes"   TEXT    NULL,
    PRIMARY KEY ("ReportedAt", "RunId", "Queue")
)
