-- Creates NimbusDelayedMessages_Index_Id, which finds a delayed message by its id (cancel, reschedule) without a scan.
-- Parameters: none
-- The bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
CREATE INDEX [NimbusDelayedMessages_Index_Id]
    ON {schema}.[NimbusDelayedMessages] ([Id]);
