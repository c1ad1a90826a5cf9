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