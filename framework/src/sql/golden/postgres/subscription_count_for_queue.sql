SELECT count(*) FROM "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
WHERE "SubscriberQueue" = $1