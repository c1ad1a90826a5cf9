-- Returns a row when NimbusSagas has the CompletedAt column (else upgrade_sagas_completed_at.sql is due).
-- Parameters: 1 schema name (text, a value)
-- Returns: one constant column (1)
SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'NimbusSagas' AND column_name = 'CompletedAt'
