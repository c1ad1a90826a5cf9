-- Creates NimbusMessages (seed 003), the table of the shared-table layout, where it is missing.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusMessages" (
    "MessageId"    TEXT NOT NULL PRIMARY KEY,
    "Destination"  TEXT NOT NULL,
    "Body"         BLOB NOT NULL,
    "VisibleAfter" TEXT NOT NULL,
    "ExpiresAt"    TEXT NULL
);
