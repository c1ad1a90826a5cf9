CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "Zeb]ra ""x"" 'y'"."NimbusMessages" ("Destination", "VisibleAfter")
    INCLUDE ("ExpiresAt");