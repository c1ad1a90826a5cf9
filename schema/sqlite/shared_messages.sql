CREATE TABLE IF NOT EXISTS "NimbusMessages" (
    "MessageId"    TEXT NOT NULL PRIMARY KEY,
    "Destination"  TEXT NOT NULL,
    "Body"         BLOB NOT NULL,
    "VisibleAfter" TEXT NOT NULL,
    "ExpiresAt"    TEXT NULL
);
-- SQLite has no INCLUDE: ExpiresAt is a third key column, which covers the same queries.
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "NimbusMessages" ("Destination", "VisibleAfter", "ExpiresAt");
