-- Creates NimbusBodies (message bodies stored apart from their queue rows by the claim check:
-- the queue row carries the body's Id in its Nimbus.ClaimCheck header) where it is missing.
-- Body is NULL when the body is in an object store (Store names it); it is kept out of line and
-- uncompressed (STORAGE EXTERNAL): a large body is written once, not compressed first.
-- Queue is where its message was written; Expires its message's; DeadLetteredAt is set while
-- its message is a dead letter.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusBodies" (
    "Id"             uuid         NOT NULL PRIMARY KEY,
    "Queue"          varchar(255) NOT NULL,
    "Body"           bytea        NULL,
    "Store"          varchar(255) NULL,
    "Size"           bigint       NOT NULL,
    "StoredAt"       timestamp    NOT NULL DEFAULT (now() AT TIME ZONE 'utc'),
    "Expires"        timestamp    NULL,
    "DeadLetteredAt" timestamp    NULL
);
ALTER TABLE {schema}."NimbusBodies" ALTER COLUMN "Body" SET STORAGE EXTERNAL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Expires"
ON {schema}."NimbusBodies" ("Expires") WHERE "Expires" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_DeadLetteredAt"
ON {schema}."NimbusBodies" ("DeadLetteredAt") WHERE "DeadLetteredAt" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Queue"
ON {schema}."NimbusBodies" ("Queue");
