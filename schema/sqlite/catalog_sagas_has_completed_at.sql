-- Returns a row when NimbusSagas has the CompletedAt column (else upgrade_sagas_completed_at.sql is due).
-- Parameters: 1 schema name (text, a value; only 'main' matches)
-- Returns: one constant column (1)
SELECT 1 FROM pragma_table_info('NimbusSagas') WHERE name = 'CompletedAt' AND ?1 = 'main'
