-- Creates NimbusSchedules where missing: one row per recurring message an endpoint declares,
-- keyed by endpoint and schedule name, with its next due time (database time, UTC), what it
-- fired last and whether an operator paused it. Every instance of the endpoint reads it; the
-- one whose update of a due row commits sends that tick's message in the same transaction.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusSchedules" (
    "Endpoint"    varchar(255) NOT NULL,
    "Name"        varchar(255) NOT NULL,
    "Cron"        varchar(255) NULL,
    "EveryMs"     bigint       NULL,
    "Target"      varchar(255) NOT NULL,
    "Missed"      varchar(32)  NOT NULL,
    "NextDue"     timestamp    NOT NULL,
    "Version"     bigint       NOT NULL,
    "Fired"       bigint       NOT NULL,
    "MissedTicks" bigint       NOT NULL,
    "LastDue"     timestamp    NULL,
    "LastFiredAt" timestamp    NULL,
    "LastFiredBy" varchar(255) NULL,
    "PausedAt"    timestamp    NULL,
    "PausedBy"    varchar(255) NULL,
    "DeclaredAt"  timestamp    NOT NULL,
    PRIMARY KEY ("Endpoint", "Name")
)
