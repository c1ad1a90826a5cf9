CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusLimits" (
    "Scope"   varchar(400) NOT NULL,
    "Slot"    integer      NOT NULL,
    "ReadyAt" timestamp    NOT NULL,
    "Held"    bigint       NOT NULL DEFAULT 0,
    PRIMARY KEY ("Scope", "Slot")
)