-- Creates NimbusMonitoring where missing: what every running bus handled per queue in each
-- report period (counts, processing and critical times, queue length), written by the bus
-- itself every `monitoring_interval`, so one console draws the charts of all instances without
-- scraping any of them. Keyed by time first: charts read, and the cleanup deletes, a time range.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusMonitoring" (
    "ReportedAt"      timestamp        NOT NULL,
    "RunId"           uuid             NOT NULL,
    "Queue"           varchar(255)     NOT NULL,
    "Application"     varchar(255)     NOT NULL,
    "Instance"        varchar(255)     NOT NULL,
    "PeriodMs"        bigint           NOT NULL,
    "Handled"         bigint           NOT NULL,
    "Failed"          bigint           NOT NULL,
    "Retried"         bigint           NOT NULL,
    "DeadLettered"    bigint           NOT NULL,
    "QueueLength"     bigint           NULL,
    "ProcessingP50Us" bigint           NULL,
    "ProcessingP95Us" bigint           NULL,
    "CriticalP50Us"   bigint           NULL,
    "CriticalP95Us"   bigint           NULL,
    "ProcessingTimes" text             NULL,
    "CriticalTimes"   text             NULL,
    PRIMARY KEY ("ReportedAt", "RunId", "Queue")
)
