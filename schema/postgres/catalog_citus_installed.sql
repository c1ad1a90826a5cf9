-- Returns a row when the Citus extension (distributed PostgreSQL) is installed in this database,
-- so that catalog_citus_undistributed.sql, which reads its catalog, can run.
-- Parameters: none
-- Returns: one constant column (1)
SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'
