-- Creates IX_NimbusMessages_Dequeue (seed 003), used by receive, peek and purge of NimbusMessages.
-- Parameters: none
-- SQLite has no INCLUDE: ExpiresAt is a third key column, which covers the same queries.
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "NimbusMessages" ("Destination", "VisibleAfter", "ExpiresAt");
