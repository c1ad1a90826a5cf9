-- Removes one subscription (an operator's unsubscribe); affects no row when there is none.
-- Parameters: 1 TopicName (nvarchar(255)), 2 SubscriberQueue (nvarchar(255))
DELETE FROM {schema}.[NimbusSubscriptions]
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
