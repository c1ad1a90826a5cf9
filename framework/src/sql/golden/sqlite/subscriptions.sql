CREATE TABLE IF NOT EXISTS "NimbusSubscriptions" (
    "TopicName"       TEXT NOT NULL,
    "SubscriberQueue" TEXT NOT NULL,
    "LastSeenAt"      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
    PRIMARY KEY ("TopicName", "SubscriberQueue")
);