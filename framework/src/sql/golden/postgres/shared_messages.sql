CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusMessages" (
    "MessageId"    uuid         NOT NULL PRIMARY KEY,
    "Destination"  varchar(255) NOT NULL,
    "Body"         bytea        NOT NULL,
    "VisibleAfter" timestamp    NOT NULL,
    "ExpiresAt"    timestamp    NULL
);