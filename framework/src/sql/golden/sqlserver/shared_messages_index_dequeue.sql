-- Creates IX_NimbusMessages_Dequeue (seed 003), used by receive, peek and purge of NimbusMessages.
-- Parameters: none
-- The seed's bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
CREATE INDEX [IX_NimbusMessages_Dequeue]
    ON [Zeb]]ra "x" 'y'].[NimbusMessages] ([Destination], [VisibleAfter])
    INCLUDE ([ExpiresAt]);
