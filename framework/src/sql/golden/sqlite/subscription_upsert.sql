INSERT INTO "NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt", "IdleSeconds")
VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?3)
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = excluded."LastSeenAt", "IdleSeconds" = excluded."IdleSeconds"