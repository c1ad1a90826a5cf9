-- Writes one subscription, or refreshes its LastSeenAt when it exists.
-- Parameters: 1 TopicName (varchar), 2 SubscriberQueue (varchar)
INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt")
VALUES ($1, $2, (now() AT TIME ZONE 'utc'))
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = EXCLUDED."LastSeenAt"
