CREATE TABLE IF NOT EXISTS {schema}."NimbusMessages" (
    "MessageId"    uuid         NOT NULL PRIMARY KEY,
    "Destination"  varchar(255) NOT NULL,
    "Body"         bytea        NOT NULL,
    "VisibleAfter" timestamp    NOT NULL,
    "ExpiresAt"    timestamp    NULL
);
CREATE INDEX IF NOT EXISTS "IX_NimbusMessages_Dequeue"
    ON {schema}."NimbusMessages" ("Destination", "VisibleAfter")
    INCLUDE ("ExpiresAt");
