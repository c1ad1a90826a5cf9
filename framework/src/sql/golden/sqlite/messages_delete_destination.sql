-- Deletes every message of a destination from NimbusMessages (dropping a queue in the shared-table layout).
-- Parameters: 1 Destination (text)
DELETE FROM "NimbusMessages" WHERE "Destination" = ?1
