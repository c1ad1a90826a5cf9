CREATE TABLE IF NOT EXISTS "NimbusDelayedMessages" (
    "Id"             TEXT    NOT NULL,
    "Destination"    TEXT    NOT NULL,
    "Due"            TEXT    NOT NULL,
    "CorrelationId"  TEXT    NULL,
    "ReplyToAddress" TEXT    NULL,
    "Expires"        TEXT    NULL,
    "Headers"        TEXT    NOT NULL,
    "Body"           BLOB    NULL,
    "RowVersion"     INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL
);
CREATE INDEX IF NOT EXISTS "NimbusDelayedMessages_Index_Due"
ON "NimbusDelayedMessages"
(
    "Due" ASC
);