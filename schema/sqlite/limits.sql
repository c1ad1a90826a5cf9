-- Creates NimbusLimits (the slots of the endpoints' limits: a limit of N messages per period
-- for a message type, or a key, has N rows in its scope, each taken until ReadyAt; the row of
-- slot -1 counts the messages the limit held back). Handlers of one SQLite file run one at a
-- time (each inside the file's one write transaction), so a limit of handlers at once always
-- has a slot free.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusLimits" (
    "Scope"   TEXT    NOT NULL,
    "Slot"    INTEGER NOT NULL,
    "ReadyAt" TEXT    NOT NULL,
    "Held"    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY ("Scope", "Slot")
)
