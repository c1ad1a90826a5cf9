-- Creates IX_NimbusMessages_Dequeue (seed 003), used by receive, peek and purge of NimbusMessages.
-- Parameters: none
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "Zeb]ra ""x"" 'y'"."NimbusMessages" ("Destination", "VisibleAfter")
    INCLUDE ("ExpiresAt");
