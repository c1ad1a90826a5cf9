-- Creates NimbusSagas (the state of each saga instance, as JSON, with the version its last
-- change gave it, and when it completed: a completed instance stays for a while, so that a
-- message arriving late finds it completed instead of starting it again) and its unique
-- (SagaType, CorrelationId) index where missing.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusSagas" (
    "Id"            uuid         NOT NULL PRIMARY KEY,
    "SagaType"      varchar(255) NOT NULL,
    "CorrelationId" varchar(255) NOT NULL,
    "State"         text         NOT NULL,
    "Version"       bigint       NOT NULL,
    "StartedAt"     timestamp    NOT NULL,
    "UpdatedAt"     timestamp    NOT NULL,
    "CompletedAt"   timestamp    NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS "NimbusSagas_Index_Correlation"
ON {schema}."NimbusSagas"
(
    "SagaType" ASC,
    "CorrelationId" ASC
);
