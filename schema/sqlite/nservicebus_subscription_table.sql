-- Creates a subscription table in NServiceBus's shape where it is missing (NServiceBus has no
-- SQLite transport; the table lets a bus's settings move between databases unchanged).
-- Parameters: none
CREATE TABLE IF NOT EXISTS {table} (
    QueueAddress TEXT NOT NULL,
    Endpoint TEXT NOT NULL,
    Topic TEXT NOT NULL,
    PRIMARY KEY (Endpoint, Topic)
)
