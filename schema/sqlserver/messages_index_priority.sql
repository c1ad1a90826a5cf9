-- Creates IX_NimbusMessages_Priority, the receive index of NimbusMessages once it keeps
-- priorities (per destination: highest priority first, then VisibleAfter, then MessageId).
-- Parameters: none
-- A bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing
-- (told apart from the dequeue index by its second key column).
CREATE NONCLUSTERED INDEX [IX_NimbusMessages_Priority]
    ON {schema}.[NimbusMessages] ([Destination] ASC, [Priority] DESC, [VisibleAfter] ASC, [MessageId] ASC)
