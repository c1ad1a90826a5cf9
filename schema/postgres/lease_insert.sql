-- Holds a received message under a lease: writes it to NimbusLeases, leased until the given number of milliseconds from now (database time). Runs in the receive's transaction, which then commits: the message is out of its queue and its handler runs with no transaction open.
-- Parameters: 1 LeaseId (uuid), 2 Queue (varchar), 3 lease in ms (bigint), 4 LeasedBy (varchar), 5 Id (varchar), 6 CorrelationId (varchar), 7 ReplyToAddress (varchar), 8 Expires (timestamp), 9 Headers (text), 10 Body (bytea)
INSERT INTO {schema}."NimbusLeases" ("LeaseId", "Queue", "LeasedUntil", "LeasedBy", "Id", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES ($1, $2, (now() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond', $4, $5, $6, $7, $8, $9, $10)
