-- Subscribes an endpoint to a topic in the NServiceBus-shaped subscription table: one row per
-- endpoint and topic, its queue's address updated when it moved.
-- Parameters: 1 QueueAddress (text), 2 Endpoint (text), 3 Topic (text)
INSERT INTO {table} (QueueAddress, Endpoint, Topic)
VALUES (?1, ?2, ?3)
ON CONFLICT (Endpoint, Topic) DO UPDATE SET QueueAddress = excluded.QueueAddress
