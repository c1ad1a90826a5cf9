SELECT "SubscriberQueue" FROM "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
WHERE "TopicName" = $1
    AND "LastSeenAt" >= (now() AT TIME ZONE 'utc') - COALESCE("IdleSeconds", $2::bigint) * interval '1 second'
ORDER BY "SubscriberQueue"