-- Counts a table's dead rows (rows of received messages that a VACUUM has not reclaimed yet),
-- from PostgreSQL's statistics; a queue table whose dead rows pile up makes every receive slow.
-- Parameters: 1 the table, schema-qualified and quoted (text)
-- Returns: DeadRows (bigint); no row when the table has no statistics yet
SELECT n_dead_tup::bigint AS "DeadRows"
FROM pg_stat_user_tables
WHERE relid = to_regclass($1)
