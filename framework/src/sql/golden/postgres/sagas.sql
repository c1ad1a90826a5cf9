CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusSagas" (
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
ON "Zeb]ra ""x"" 'y'"."NimbusSagas"
(
    "SagaType" ASC,
    "CorrelationId" ASC
);