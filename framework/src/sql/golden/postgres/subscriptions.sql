CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusSubscriptions" (
    "TopicName"       varchar(255) NOT NULL,
    "SubscriberQueue" varchar(255) NOT NULL,
    "LastSeenAt"      timestamp    NOT NULL DEFAULT (now() AT TIME ZONE 'utc'),
    PRIMARY KEY ("TopicName", "SubscriberQueue")
);