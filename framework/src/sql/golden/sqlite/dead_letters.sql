CREATE TABLE IF NOT EXISTS "NimbusDeadLetters" (
    "MessageId"           TEXT    NOT NULL PRIMARY KEY,
    "OriginalDestination" TEXT    NULL,
    "Body"                BLOB    NOT NULL,
    "DeliveryAttempts"    INTEGER NOT NULL,
    "FailedAt"            TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);