-- Refreshes LastSeenAt of one subscription (its heartbeat); affects no row when it is gone.
-- Parameters: 1 TopicName (text), 2 SubscriberQueue (text)
UPDATE "NimbusSubscriptions"
SET "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "TopicName" = ?1 AND "SubscriberQueue" = ?2
