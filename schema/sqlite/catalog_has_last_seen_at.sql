-- Returns a row when NimbusSubscriptions has the LastSeenAt column (else seed 003's upgrade is due).
-- Parameters: 1 schema name (text, a value; only 'main' matches)
-- Returns: one constant column (1)
SELECT 1 FROM pragma_table_info('NimbusSubscriptions') WHERE name = 'LastSeenAt' AND ?1 = 'main'
