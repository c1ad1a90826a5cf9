-- Deletes at most a batch of expired messages (by database time) of a destination, skipping locked rows.
-- Parameters: 1 Destination (nvarchar(255)), 2 batch size (bigint)
DELETE FROM {schema}.[NimbusMessages]
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId] FROM {schema}.[NimbusMessages] WITH (READPAST)
    WHERE [Destination] = @P1 AND [ExpiresAt] < SYSUTCDATETIME());
