CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages" (
    "Id"             uuid         NOT NULL,
    "Destination"    varchar(255) NOT NULL,
    "Due"            timestamp    NOT NULL,
    "CorrelationId"  varchar(255) NULL,
    "ReplyToAddress" varchar(255) NULL,
    "Expires"        timestamp    NULL,
    "Headers"        text         NOT NULL,
    "Body"           bytea        NULL,
    "RowVersion"     bigint       GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1) NOT NULL
);
CREATE INDEX IF NOT EXISTS "NimbusDelayedMessages_Index_Due"
ON "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages"
(
    "Due" ASC
);