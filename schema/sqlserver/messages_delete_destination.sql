-- Deletes at most a batch of a destination's messages from NimbusMessages (dropping a queue in the shared-table layout: repeated until a batch comes back short).
-- Parameters: 1 Destination (nvarchar(255)), 2 batch size (bigint)
-- In batches, so that no statement holds enough row locks for SQL Server to escalate them to a
-- lock on the whole table, which every queue of the schema shares.
DELETE TOP (@P2) FROM {schema}.[NimbusMessages] WHERE [Destination] = @P1;
