CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" (
    "Id"             uuid         NOT NULL,
    "CorrelationId"  varchar(255) NULL,
    "ReplyToAddress" varchar(255) NULL,
    "Recoverable"    boolean      NOT NULL,
    "Expires"        timestamp    NULL,
    "Headers"        text         NOT NULL,
    "Body"           bytea        NULL,
    "RowVersion"     bigint       GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1) NOT NULL
);