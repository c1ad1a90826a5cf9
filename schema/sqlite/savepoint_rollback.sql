-- Undoes what was written since savepoint.sql, keeping the receive's transaction open.
-- Parameters: none
ROLLBACK TO SAVEPOINT nimbus_outgoing
