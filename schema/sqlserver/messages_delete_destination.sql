-- Deletes every message of a destination from NimbusMessages (dropping a queue in the shared-table layout).
-- Parameters: 1 Destination (nvarchar(255))
DELETE FROM {schema}.[NimbusMessages] WHERE [Destination] = @P1;
