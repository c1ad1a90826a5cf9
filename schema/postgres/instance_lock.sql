-- Takes the advisory lock that serializes the starts of buses with one application and
-- instance name, until the transaction ends, so that two processes starting at once cannot both
-- find the name free; waits at most the time given, then fails rather than hang.
-- Parameters: 1 the application and instance name (text, $1), 2 the longest wait in
-- milliseconds (int, $2)
-- Returns: lock_timeout (text), pg_advisory_xact_lock (void)
-- The keys are 1313426761 (0x4e494d49, the bytes of "NIMI") and the hash of the name.
SELECT set_config('lock_timeout', ($2::int)::text, true),
    pg_advisory_xact_lock(1313426761, hashtext($1::text))
