-- Writes one subscription, or refreshes its LastSeenAt (and the idle period its subscriber
-- promised) when it exists.
-- Parameters: 1 TopicName (text), 2 SubscriberQueue (text), 3 IdleSeconds (integer: the subscriber's auto_delete_on_idle)
INSERT INTO "NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds")
VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?3)
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = excluded."LastSeenAt", "IdleSeconds" = excluded."IdleSeconds"
