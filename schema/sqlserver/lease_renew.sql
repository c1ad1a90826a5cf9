-- Renews a lease: LeasedUntil becomes the given number of milliseconds from now (database time). Affects no row when the lease is gone (taken back after it expired).
-- Parameters: 1 LeaseId (uniqueidentifier), 2 lease in ms (bigint)
UPDATE {schema}.[NimbusLeases] WITH (ROWLOCK)
SET [LeasedUntil] = DATEADD(millisecond, @P2 % 1000, DATEADD(second, @P2 / 1000, SYSUTCDATETIME()))
WHERE [LeaseId] = @P1;
