SELECT n_dead_tup::bigint AS "DeadRows"
FROM pg_stat_user_tables
WHERE relid = to_regclass($1)