-- Announces one queue inside the application's own transaction (Bus::in_transaction): PostgreSQL
-- delivers the notification only if that transaction commits, and drops it on rollback.
-- Parameters: 1 payload (text: the schema and the queue, separated by U+001F)
SELECT pg_notify('nimbus', $1)
