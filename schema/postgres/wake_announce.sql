-- Announces, after they committed, the queues this process wrote to, one notification per
-- queue, in one statement for everything written while the previous announcement was on the
-- wire. Payload: the schema and the queue, separated by U+001F.
-- Parameters: 1 payloads (text[])
SELECT pg_notify('nimbus', p) FROM unnest($1::text[]) AS p
