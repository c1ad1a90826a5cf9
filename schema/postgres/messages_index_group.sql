-- Creates IX_NimbusMessages_Group (finds whether a message's group has one placed before it, in
-- its destination) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Group"
    ON {schema}."NimbusMessages" ("Destination", "GroupKey", "GroupPlace", "MessageId");
