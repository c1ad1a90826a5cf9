CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Priority"
    ON "NimbusMessages" ("Destination", "Priority" DESC, "VisibleAfter", "MessageId");