-- Removes one subscription (an operator's unsubscribe); affects no row when there is none.
-- Parameters: 1 TopicName (text), 2 SubscriberQueue (text)
DELETE FROM "NimbusSubscriptions"
WHERE "TopicName" = ?1 AND "SubscriberQueue" = ?2
