-- Subscribes an endpoint to a topic in NServiceBus's subscription table: one row per endpoint
-- and topic, its queue's address updated when it moved. NServiceBus runs a MERGE WITH (HOLDLOCK,
-- TABLOCK); this takes a key-range lock on the one row instead, as Nimbus's own upsert does.
-- Parameters: 1 QueueAddress (nvarchar(200)), 2 Endpoint (nvarchar(200)), 3 Topic (nvarchar(200))
UPDATE {table} WITH (UPDLOCK, SERIALIZABLE)
SET [QueueAddress] = @P1
WHERE [Endpoint] = @P2 AND [Topic] = @P3;
IF @@ROWCOUNT = 0
    INSERT INTO {table} ([QueueAddress], [Endpoint], [Topic])
    VALUES (@P1, @P2, @P3);
