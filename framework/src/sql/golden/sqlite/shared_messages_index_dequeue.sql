CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON "NimbusMessages" ("Destination", "VisibleAfter", "ExpiresAt");