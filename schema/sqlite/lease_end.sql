-- Ends a lease, in the transaction that commits what became of its message (handled with its sends, retried or dead-lettered). Affects no row when the lease is gone (taken back after it expired): the transaction is then rolled back.
-- Parameters: 1 LeaseId (text)
DELETE FROM "NimbusLeases"
WHERE "LeaseId" = ?1
