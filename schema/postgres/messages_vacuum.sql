-- Reclaims the dead rows of NimbusMessages (shared-table layout) and refreshes its statistics,
-- without blocking sends or receives, skipping the table when another VACUUM holds it. Runs
-- outside any transaction.
-- Parameters: none
VACUUM (SKIP_LOCKED, ANALYZE) {schema}."NimbusMessages"
