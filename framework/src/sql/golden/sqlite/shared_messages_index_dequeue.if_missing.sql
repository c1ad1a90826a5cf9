-- Runs an index creation statement only when the index is missing.
-- Parameters: none
-- SQLite index statements already say IF NOT EXISTS, so the statement runs as it is.
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "NimbusMessages" ("Destination", "VisibleAfter", "ExpiresAt")
