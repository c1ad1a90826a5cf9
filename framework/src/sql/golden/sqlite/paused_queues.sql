CREATE TABLE IF NOT EXISTS "NimbusPausedQueues" (
    "Queue"    TEXT NOT NULL PRIMARY KEY,
    "PausedAt" TEXT NOT NULL,
    "PausedBy" TEXT NOT NULL
)