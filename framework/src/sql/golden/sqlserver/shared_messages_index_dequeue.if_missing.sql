IF NOT EXISTS (
    SELECT 1 FROM sys.indexes
    WHERE [object_id] = OBJECT_ID(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2))
        AND [name] = @P3)
CREATE INDEX [IX_NimbusMessages_Dequeue]
    ON [Zeb]]ra "x" 'y'].[NimbusMessages] ([Destination], [VisibleAfter])
    INCLUDE ([ExpiresAt]);