-- Drops a queue table if it exists (the idle sweep of a per-instance queue).
-- Parameters: none
DROP TABLE IF EXISTS {table}
