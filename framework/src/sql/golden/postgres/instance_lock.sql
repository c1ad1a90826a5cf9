SELECT set_config('lock_timeout', ($2::int)::text, true),
    pg_advisory_xact_lock(1313426761, hashtext($1::text))