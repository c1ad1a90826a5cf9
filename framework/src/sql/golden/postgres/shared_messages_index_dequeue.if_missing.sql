-- Runs an index creation statement only when the index is missing.
-- Parameters: none
-- PostgreSQL index statements already say IF NOT EXISTS, so the statement runs as it is.
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "Zeb]ra ""x"" 'y'"."NimbusMessages" ("Destination", "VisibleAfter")
    INCLUDE ("ExpiresAt")
