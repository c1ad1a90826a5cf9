-- Undoes what was written since savepoint.sql, keeping the receive's transaction open (the
-- transaction must still be committable: XACT_STATE() = 1, as it is for statement-level errors
-- with XACT_ABORT OFF, the default).
-- Parameters: none
ROLLBACK TRANSACTION nimbus_outgoing;
