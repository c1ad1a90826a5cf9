CREATE INDEX IF NOT EXISTS "NimbusDelayedMessages_Index_Id"
    ON "NimbusDelayedMessages" ("Id");