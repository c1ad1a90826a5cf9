UPDATE "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
SET "LastSeenAt" = (now() AT TIME ZONE 'utc')
WHERE "TopicName" = $1 AND "SubscriberQueue" = $2