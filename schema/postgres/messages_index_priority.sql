-- Creates IX_NimbusMessages_Priority, the receive index of NimbusMessages once it keeps
-- priorities (per destination: highest priority first, then VisibleAfter, then MessageId),
-- where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Priority"
    ON {schema}."NimbusMessages" ("Destination", "Priority" DESC, "VisibleAfter", "MessageId");
