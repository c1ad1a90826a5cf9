-- Takes the advisory lock that serializes schema creation across instances, until the transaction ends.
-- Parameters: none
-- Returns: pg_advisory_xact_lock (void)
-- The key 86076735771987 is 0x4e494d425553, the bytes of "NIMBUS".
SELECT pg_advisory_xact_lock(86076735771987);
