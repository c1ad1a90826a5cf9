-- Creates NimbusSagas (the state of each saga instance, as JSON, with the version its last
-- change gave it, and when it completed: a completed instance stays for a while, so that a
-- message arriving late finds it completed instead of starting it again) and its unique
-- (SagaType, CorrelationId) index where missing.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusSagas" (
    "Id"            TEXT    NOT NULL PRIMARY KEY,
    "SagaType"      TEXT    NOT NULL,
    "CorrelationId" TEXT    NOT NULL,
    "State"         TEXT    NOT NULL,
    "Version"       INTEGER NOT NULL,
    "StartedAt"     TEXT    NOT NULL,
    "UpdatedAt"     TEXT    NOT NULL,
    "CompletedAt"   TEXT    NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS "NimbusSagas_Index_Correlation"
ON "NimbusSagas"
(
    "SagaType" ASC,
    "CorrelationId" ASC
);
