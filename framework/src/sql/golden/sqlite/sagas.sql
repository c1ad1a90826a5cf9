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