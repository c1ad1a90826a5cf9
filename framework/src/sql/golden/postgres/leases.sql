CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusLeases" (
    "LeaseId"        uuid         NOT NULL PRIMARY KEY,
    "Queue"          varchar(255) NOT NULL,
    "LeasedUntil"    timestamp    NOT NULL,
    "LeasedBy"       varchar(255) NOT NULL,
    "Id"             varchar(255) NOT NULL,
    "CorrelationId"  varchar(255) NULL,
    "ReplyToAddress" varchar(255) NULL,
    "Expires"        timestamp    NULL,
    "Headers"        text         NOT NULL,
    "Body"           bytea        NULL
);
CREATE INDEX IF NOT EXISTS "NimbusLeases_Index_Queue"
ON "Zeb]ra ""x"" 'y'"."NimbusLeases"
(
    "Queue" ASC,
    "LeasedUntil" ASC
);