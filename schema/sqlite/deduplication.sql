-- Creates NimbusDeduplication (keys seen within a window: the deduplication keys of sends, per
-- destination queue, and the ids of messages an endpoint's inbox handled, per queue) and its
-- ExpiresAt index where missing.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusDeduplication" (
    "Scope"     TEXT NOT NULL,
    "Key"       TEXT NOT NULL,
    "ExpiresAt" TEXT NOT NULL,
    PRIMARY KEY ("Scope", "Key")
);
CREATE INDEX IF NOT EXISTS "NimbusDeduplication_Index_ExpiresAt"
ON "NimbusDeduplication"
(
    "ExpiresAt" ASC
);
