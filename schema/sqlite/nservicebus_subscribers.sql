-- The addresses of the queues subscribed to a topic in the NServiceBus-shaped subscription
-- table.
-- Parameters: 1 Topic (text)
-- Returns: QueueAddress
SELECT DISTINCT QueueAddress FROM {table} WHERE Topic = ?1
