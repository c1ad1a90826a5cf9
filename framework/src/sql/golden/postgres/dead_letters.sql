CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusDeadLetters" (
    "MessageId"           uuid         NOT NULL PRIMARY KEY,
    "OriginalDestination" varchar(255) NULL,
    "Body"                bytea        NOT NULL,
    "DeliveryAttempts"    integer      NOT NULL,
    "FailedAt"            timestamp    NOT NULL DEFAULT (now() AT TIME ZONE 'utc')
);