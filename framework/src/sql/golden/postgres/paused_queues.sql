CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusPausedQueues" (
    "Queue"    varchar(255) NOT NULL PRIMARY KEY,
    "PausedAt" timestamp    NOT NULL,
    "PausedBy" varchar(255) NOT NULL
)