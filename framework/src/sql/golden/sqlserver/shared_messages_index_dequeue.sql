CREATE INDEX [IX_NimbusMessages_Dequeue]
    ON [Zeb]]ra "x" 'y'].[NimbusMessages] ([Destination], [VisibleAfter])
    INCLUDE ([ExpiresAt]);