-- Creates IX_NimbusMessages_Priority, the receive index of NimbusMessages once it keeps
-- priorities (per destination: highest priority first, then VisibleAfter, then MessageId).
-- Parameters: none
-- A bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing
-- (by name: its first key column is the dequeue index's).
CREATE NONCLUSTERED INDEX [IX_NimbusMessages_Priority]
    ON {schema}.[NimbusMessages] ([Destination] ASC, [Priority] DESC, [VisibleAfter] ASC, [MessageId] ASC)
