SELECT s.n_dead_tup::bigint AS "DeadRows",
       CASE WHEN current_setting('autovacuum')::boolean
                 AND current_setting('track_counts')::boolean
                 AND COALESCE((SELECT o.option_value::boolean
                               FROM pg_options_to_table(c.reloptions) o
                               WHERE o.option_name = 'autovacuum_enabled'), true)
            THEN (COALESCE((SELECT o.option_value::bigint
                            FROM pg_options_to_table(c.reloptions) o
                            WHERE o.option_name = 'autovacuum_vacuum_threshold'),
                           current_setting('autovacuum_vacuum_threshold')::bigint)
                  + COALESCE((SELECT o.option_value::float8
                              FROM pg_options_to_table(c.reloptions) o
                              WHERE o.option_name = 'autovacuum_vacuum_scale_factor'),
                             current_setting('autovacuum_vacuum_scale_factor')::float8)
                    * GREATEST(c.reltuples, 0))::bigint
       END AS "AutovacuumAt",
       EXTRACT(EPOCH FROM current_setting('autovacuum_naptime')::interval)::bigint
           AS "NaptimeSeconds"
FROM pg_stat_user_tables s
JOIN pg_class c ON c.oid = s.relid
WHERE s.relid = to_regclass($1)