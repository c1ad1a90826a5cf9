-- Creates NimbusSchedules where missing: one row per recurring message an endpoint declares,
-- keyed by endpoint and schedule name, with its next due time (database time, UTC), what it
-- fired last and whether an operator paused it. Every instance of the endpoint reads it; the
-- one whose update of a due row commits sends that tick's message in the same transaction.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusSchedules" (
    "Endpoint"    TEXT    NOT NULL,
    "Name"        TEXT    NOT NULL,
    "Cron"        TEXT    NULL,
    "EveryMs"     INTEGER NULL,
    "Target"      TEXT    NOT NULL,
    "Missed"      TEXT    NOT NULL,
    "NextDue"     TEXT    NOT NULL,
    "Version"     INTEGER NOT NULL,
    "Fired"       INTEGER NOT NULL,
    "MissedTicks" INTEGER NOT NULL,
    "LastDue"     TEXT    NULL,
    "LastFiredAt" TEXT    NULL,
    "LastFiredBy" TEXT    NULL,
    "PausedAt"    TEXT    NULL,
    "PausedBy"    TEXT    NULL,
    "DeclaredAt"  TEXT    NOT NULL,
    PRIMARY KEY ("Endpoint", "Name")
)
