CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusDeduplication" (
    "Scope"     varchar(400) NOT NULL,
    "Key"       varchar(255) NOT NULL,
    "ExpiresAt" timestamp    NOT NULL,
    PRIMARY KEY ("Scope", "Key")
);
CREATE INDEX IF NOT EXISTS "NimbusDeduplication_Index_ExpiresAt"
ON "Zeb]ra ""x"" 'y'"."NimbusDeduplication"
(
    "ExpiresAt" ASC
);