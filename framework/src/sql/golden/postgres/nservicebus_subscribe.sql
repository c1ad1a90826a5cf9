INSERT INTO "Zeb]ra ""x"" 'y'"."SubscriptionRouting" (QueueAddress, Endpoint, Topic)
VALUES ($1, $2, $3)
ON CONFLICT (Endpoint, Topic) DO UPDATE SET QueueAddress = EXCLUDED.QueueAddress