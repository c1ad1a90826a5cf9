-- Holds a received message under a lease: writes it to NimbusLeases, leased until the given number of milliseconds from now (database time). Runs in the receive's transaction, which then commits: the message is out of its queue and its handler runs with no transaction open.
-- Parameters: 1 LeaseId (text), 2 Queue (text), 3 lease in ms (integer), 4 LeasedBy (text), 5 Id (text), 6 CorrelationId (text), 7 ReplyToAddress (text), 8 Expires (text UTC), 9 Headers (text), 10 Body (blob)
INSERT INTO "NimbusLeases" ("LeaseId", "Queue", "LeasedUntil", "LeasedBy", "Id", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f', 'now', (?3 / 1000.0) || ' seconds'), ?4, ?5, ?6, ?7, ?8, ?9, ?10)
