-- Creates NimbusDelayedMessages_Index_Id, which finds a delayed message by its id (cancel, reschedule) without a scan.
-- Parameters: none
CREATE INDEX IF NOT EXISTS "NimbusDelayedMessages_Index_Id"
    ON "NimbusDelayedMessages" ("Id");
