-- Creates NServiceBus's subscription table (its PostgreSQL transport's
-- CreateSubscriptionTableText, same unquoted column names, so both read one table) where it is
-- missing, for a bus that shares subscriptions with NServiceBus endpoints.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {table} (
    QueueAddress VARCHAR(200) NOT NULL,
    Endpoint VARCHAR(200) NOT NULL,
    Topic VARCHAR(200) NOT NULL,
    PRIMARY KEY (Endpoint, Topic)
) WITH (fillfactor=100)
