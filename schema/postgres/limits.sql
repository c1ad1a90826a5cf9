-- Creates NimbusLimits (the slots of the endpoints' limits: a limit of N handlers at once or N
-- messages per period for a message type, or a key, has N rows in its scope; a handler holds
-- one locked from its receive to its commit, and a rate's row stays taken until ReadyAt; the
-- row of slot -1 counts the messages the limit held back).
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusLimits" (
    "Scope"   varchar(400) NOT NULL,
    "Slot"    integer      NOT NULL,
    "ReadyAt" timestamp    NOT NULL,
    "Held"    bigint       NOT NULL DEFAULT 0,
    PRIMARY KEY ("Scope", "Slot")
)
