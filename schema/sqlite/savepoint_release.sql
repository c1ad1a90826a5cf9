-- Ends the savepoint a handler's own statements run after, just before the receive commits. It
-- fails if one of those statements left the transaction unable to commit (PostgreSQL aborts the
-- whole transaction on an error), so that the attempt is undone to the savepoint and counted as
-- failed instead of committing nothing.
-- Parameters: none
RELEASE SAVEPOINT nimbus_outgoing
