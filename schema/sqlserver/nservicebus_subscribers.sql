-- The addresses of the queues subscribed to a topic in NServiceBus's subscription table (its
-- GetSubscribersText, for one topic: NServiceBus's type full name, which is the event's
-- type name here).
-- Parameters: 1 Topic (nvarchar(200))
-- Returns: QueueAddress
SELECT DISTINCT [QueueAddress] FROM {table} WHERE [Topic] = @P1;
