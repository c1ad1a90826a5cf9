-- Returns a row when NimbusSubscriptions has the IdleSeconds column (else upgrade_subscriptions_idle_seconds.sql is due).
-- Parameters: 1 schema name (text, a value; only 'main' matches)
-- Returns: one constant column (1)
SELECT 1 FROM pragma_table_info('NimbusSubscriptions') WHERE name = 'IdleSeconds' AND ?1 = 'main'
