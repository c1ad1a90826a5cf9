-- Deletes a delayed message of the shared-table layout while it is not yet visible: 1 row when it was pending, 0 when it was visible already (delivered) or never existed. A receive holding the row is waited for, so exactly one of the two wins.
-- Parameters: 1 MessageId (uniqueidentifier)
DELETE FROM {schema}.[NimbusMessages] WITH (ROWLOCK)
WHERE [MessageId] = @P1 AND [VisibleAfter] > SYSUTCDATETIME();
