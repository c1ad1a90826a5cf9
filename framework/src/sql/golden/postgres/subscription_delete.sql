DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
WHERE "TopicName" = $1 AND "SubscriberQueue" = $2