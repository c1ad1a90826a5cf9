-- Renews a lease: LeasedUntil becomes the given number of milliseconds from now (database time). Affects no row when the lease is gone (taken back after it expired).
-- Parameters: 1 LeaseId (uuid), 2 lease in ms (bigint)
UPDATE {schema}."NimbusLeases"
SET "LeasedUntil" = (now() AT TIME ZONE 'utc') + $2::bigint * interval '1 millisecond'
WHERE "LeaseId" = $1
