CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."SubscriptionRouting" (
    QueueAddress VARCHAR(200) NOT NULL,
    Endpoint VARCHAR(200) NOT NULL,
    Topic VARCHAR(200) NOT NULL,
    PRIMARY KEY (Endpoint, Topic)
) WITH (fillfactor=100)