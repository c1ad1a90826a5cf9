-- Reclaims the dead rows of a queue table and refreshes its statistics, without blocking sends
-- or receives (VACUUM takes a lock that conflicts only with other maintenance), skipping the
-- table when another VACUUM holds it. Runs outside any transaction.
-- Parameters: none
VACUUM (SKIP_LOCKED, ANALYZE) {table}
