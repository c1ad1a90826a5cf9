-- Creates NimbusDeduplication (keys seen within a window: the deduplication keys of sends, per
-- destination queue, and the ids of messages an endpoint's inbox handled, per queue) and its
-- ExpiresAt index where missing.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusDeduplication" (
    "Scope"     varchar(400) NOT NULL,
    "Key"       varchar(255) NOT NULL,
    "ExpiresAt" timestamp    NOT NULL,
    PRIMARY KEY ("Scope", "Key")
);
CREATE INDEX IF NOT EXISTS "NimbusDeduplication_Index_ExpiresAt"
ON {schema}."NimbusDeduplication"
(
    "ExpiresAt" ASC
);
