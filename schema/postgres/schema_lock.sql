-- Takes the advisory lock that serializes schema creation in one schema across instances, until the transaction ends; waits at most the time given, then fails rather than hang.
-- Parameters: 1 schema name (text, $1), 2 the longest wait in milliseconds (int, $2)
-- Returns: lock_timeout (text), pg_advisory_xact_lock (void)
-- Auto-create takes it only when something is missing (a start on a complete schema reads the
-- catalog and takes no lock), and per schema: the keys are 1313426754 (0x4e494d42, the bytes of
-- "NIMB") and the hash of the schema's name. lock_timeout, set for the rest of the transaction,
-- bounds the wait for this lock and for the table locks of the DDL that follows; it is shorter
-- than the statement's deadline, so a waiter fails with "lock timeout" (55P03).
SELECT set_config('lock_timeout', ($2::int)::text, true),
    pg_advisory_xact_lock(1313426754, hashtext($1::text));
