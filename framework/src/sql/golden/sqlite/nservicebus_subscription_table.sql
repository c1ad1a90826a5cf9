CREATE TABLE IF NOT EXISTS "SubscriptionRouting" (
    QueueAddress TEXT NOT NULL,
    Endpoint TEXT NOT NULL,
    Topic TEXT NOT NULL,
    PRIMARY KEY (Endpoint, Topic)
)