CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Group"
    ON "Zeb]ra ""x"" 'y'"."NimbusMessages" ("Destination", "GroupKey", "GroupPlace", "MessageId");