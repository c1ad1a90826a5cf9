-- Creates one queue table in the shape NServiceBus's PostgreSQL transport creates (its
-- CreateQueueText, in PostgreSqlConstants.cs of Particular/NServiceBus.SqlServer) where it is
-- missing. The names are unquoted, as NServiceBus writes them, so PostgreSQL stores them in lower
-- case: id, expires, headers, body, seq. Seq's UNIQUE constraint is the FIFO index.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {table} (
    Id uuid NOT NULL PRIMARY KEY,
    Expires TIMESTAMP,
    Headers TEXT NOT NULL,
    Body BYTEA,
    Seq serial NOT NULL UNIQUE
);
