-- Creates NimbusMessages (seed 003), the table of the shared-table layout, where it is missing.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusMessages" (
    "MessageId"    uuid         NOT NULL PRIMARY KEY,
    "Destination"  varchar(255) NOT NULL,
    "Body"         bytea        NOT NULL,
    "VisibleAfter" timestamp    NOT NULL,
    "ExpiresAt"    timestamp    NULL
);
