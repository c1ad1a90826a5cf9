-- Writes one subscription, or refreshes its LastSeenAt (and the idle period its subscriber
-- promised) when it exists.
-- Parameters: 1 TopicName (varchar), 2 SubscriberQueue (varchar), 3 IdleSeconds (bigint: the subscriber's auto_delete_on_idle)
INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds")
VALUES ($1, $2, (now() AT TIME ZONE 'utc'), $3)
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = EXCLUDED."LastSeenAt", "IdleSeconds" = EXCLUDED."IdleSeconds"
