-- Refreshes LastSeenAt of one subscription (its heartbeat); affects no row when it is gone.
-- Parameters: 1 TopicName (varchar), 2 SubscriberQueue (varchar)
UPDATE "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
SET "LastSeenAt" = (now() AT TIME ZONE 'utc')
WHERE "TopicName" = $1 AND "SubscriberQueue" = $2
