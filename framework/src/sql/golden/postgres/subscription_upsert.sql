INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds")
VALUES ($1, $2, (now() AT TIME ZONE 'utc'), $3)
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = EXCLUDED."LastSeenAt", "IdleSeconds" = EXCLUDED."IdleSeconds"