CREATE TABLE IF NOT EXISTS "NimbusLimits" (
    "Scope"   TEXT    NOT NULL,
    "Slot"    INTEGER NOT NULL,
    "ReadyAt" TEXT    NOT NULL,
    "Held"    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY ("Scope", "Slot")
)