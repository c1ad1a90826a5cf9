-- Subscribes an endpoint to a topic in NServiceBus's subscription table (its SubscribeText):
-- one row per endpoint and topic, its queue's address updated when it moved.
-- Parameters: 1 QueueAddress (varchar), 2 Endpoint (varchar), 3 Topic (varchar)
INSERT INTO {table} (QueueAddress, Endpoint, Topic)
VALUES ($1, $2, $3)
ON CONFLICT (Endpoint, Topic) DO UPDATE SET QueueAddress = EXCLUDED.QueueAddress
