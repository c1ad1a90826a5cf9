CREATE TABLE IF NOT EXISTS "it's [Wal]] ""rus""" (
    "Id"             TEXT    NOT NULL,
    "CorrelationId"  TEXT    NULL,
    "ReplyToAddress" TEXT    NULL,
    "Recoverable"    INTEGER NOT NULL,
    "Expires"        TEXT    NULL,
    "Headers"        TEXT    NOT NULL,
    "Body"           BLOB    NULL,
    "RowVersion"     INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL
);