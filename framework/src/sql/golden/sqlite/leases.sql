CREATE TABLE IF NOT EXISTS "NimbusLeases" (
    "LeaseId"        TEXT NOT NULL PRIMARY KEY,
    "Queue"          TEXT NOT NULL,
    "LeasedUntil"    TEXT NOT NULL,
    "LeasedBy"       TEXT NOT NULL,
    "Id"             TEXT NOT NULL,
    "CorrelationId"  TEXT NULL,
    "ReplyToAddress" TEXT NULL,
    "Expires"        TEXT NULL,
    "Headers"        TEXT NOT NULL,
    "Body"           BLOB NULL
);
CREATE INDEX IF NOT EXISTS "NimbusLeases_Index_Queue"
ON "NimbusLeases"
(
    "Queue" ASC,
    "LeasedUntil" ASC
);