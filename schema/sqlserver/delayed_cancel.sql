-- Deletes a delayed message that is still waiting in NimbusDelayedMessages: 1 row when it was pending, 0 when it was delivered (moved to its queue) or never existed. A delivery holding the row is waited for (no READPAST), so exactly one of the two wins.
-- Parameters: 1 Id (uniqueidentifier)
DELETE FROM {schema}.[NimbusDelayedMessages] WITH (ROWLOCK)
WHERE [Id] = @P1;
