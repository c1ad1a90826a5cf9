-- Removes one subscription (an operator's unsubscribe); affects no row when there is none.
-- Parameters: 1 TopicName (varchar), 2 SubscriberQueue (varchar)
DELETE FROM {schema}."NimbusSubscriptions"
WHERE "TopicName" = $1 AND "SubscriberQueue" = $2
