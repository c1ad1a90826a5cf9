CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Group"
    ON "NimbusMessages" ("Destination", "GroupKey", "GroupPlace", "MessageId");