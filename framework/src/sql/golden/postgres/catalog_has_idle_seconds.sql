-- Returns a row when NimbusSubscriptions has the IdleSeconds column (else upgrade_subscriptions_idle_seconds.sql is due).
-- Parameters: 1 schema name (text, a value)
-- Returns: one constant column (1)
SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'NimbusSubscriptions' AND column_name = 'IdleSeconds'
