CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusSchedules" (
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