-- Returns a row when NimbusSubscriptions has the LastSeenAt column (else seed 003's upgrade is due).
-- Parameters: 1 schema name (text, a value)
-- Returns: one constant column (1)
SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'NimbusSubscriptions' AND column_name = 'LastSeenAt'
