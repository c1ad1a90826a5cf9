-- Creates NimbusBodies (message bodies stored apart from their queue rows by the claim check:
-- the queue row carries the body's Id in its Nimbus.ClaimCheck header) where it is missing.
-- Body is NULL when the body is in an object store (Store names it); it is kept out of line and
-- uncompressed (STORAGE EXTERNAL): a large body is written once, not compressed first. Citus
-- refuses to change a distributed table's column storage: there the body keeps the default.
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
DO $nimbus$ BEGIN
    ALTER TABLE {schema}."NimbusBodies" ALTER COLUMN "Body" SET STORAGE EXTERNAL;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $nimbus$;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Expires"
ON {schema}."NimbusBodies" ("Expires") WHERE "Expires" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_DeadLetteredAt"
ON {schema}."NimbusBodies" ("DeadLetteredAt") WHERE "DeadLetteredAt" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Queue"
ON {schema}."NimbusBodies" ("Queue");
