CREATE INDEX IF NOT EXISTS "NimbusDelayedMessages_Index_Id"
    ON "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages" ("Id");