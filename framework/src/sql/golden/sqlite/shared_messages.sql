CREATE TABLE IF NOT EXISTS "NimbusMessages" (
    "MessageId"    TEXT NOT NULL PRIMARY KEY,
    "Destination"  TEXT NOT NULL,
    "Body"         BLOB NOT NULL,
    "VisibleAfter" TEXT NOT NULL,
    "ExpiresAt"    TEXT NULL
);