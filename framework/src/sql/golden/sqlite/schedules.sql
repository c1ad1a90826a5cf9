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