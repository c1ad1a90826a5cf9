-- Ends a lease, in the transaction that commits what became of its message (handled with its sends, retried or dead-lettered). Affects no row when the lease is gone (taken back after it expired): the transaction is then rolled back.
-- Parameters: 1 LeaseId (uniqueidentifier)
DELETE FROM {schema}.[NimbusLeases] WITH (ROWLOCK)
WHERE [LeaseId] = @P1;
