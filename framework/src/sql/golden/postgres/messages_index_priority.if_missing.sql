CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Priority"
    ON "Zeb]ra ""x"" 'y'"."NimbusMessages" ("Destination", "Priority" DESC, "VisibleAfter", "MessageId")