-- Creates IX_NimbusMessages_Group (finds whether a message's group has one placed before it, in
-- its destination).
-- Parameters: none
-- A bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing
-- (told apart from the dequeue index by its second key column).
CREATE NONCLUSTERED INDEX [IX_NimbusMessages_Group]
    ON {schema}.[NimbusMessages] ([Destination] ASC, [GroupKey] ASC, [GroupPlace] ASC, [MessageId] ASC)
