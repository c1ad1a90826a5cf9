-- Marks the point inside a receive's transaction before the handler's sends are written, so a
-- send the database refuses for good (a missing table, a value too long) can be undone alone
-- and the message's failed attempt recorded in the same transaction.
-- Parameters: none
SAVEPOINT nimbus_outgoing
