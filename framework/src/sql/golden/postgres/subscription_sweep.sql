DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
WHERE "LastSeenAt" < (now() AT TIME ZONE 'utc') - COALESCE("IdleSeconds", $1::bigint) * interval '1 second'
RETURNING "TopicName", "SubscriberQueue"