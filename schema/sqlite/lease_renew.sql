-- Renews a lease: LeasedUntil becomes the given number of milliseconds from now (database time). Affects no row when the lease is gone (taken back after it expired).
-- Parameters: 1 LeaseId (text), 2 lease in ms (integer)
UPDATE "NimbusLeases"
SET "LeasedUntil" = strftime('%Y-%m-%d %H:%M:%f', 'now', (?2 / 1000.0) || ' seconds')
WHERE "LeaseId" = ?1
