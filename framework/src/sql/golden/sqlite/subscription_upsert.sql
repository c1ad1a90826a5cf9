-- Writes one subscription, or refreshes its LastSeenAt when it exists.
-- Parameters: 1 TopicName (text), 2 SubscriberQueue (text)
INSERT INTO "NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt")
VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = excluded."LastSeenAt"
