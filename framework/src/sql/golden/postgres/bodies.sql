CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusBodies" (
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
    ALTER TABLE "Zeb]ra ""x"" 'y'"."NimbusBodies" ALTER COLUMN "Body" SET STORAGE EXTERNAL;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $nimbus$;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Expires"
ON "Zeb]ra ""x"" 'y'"."NimbusBodies" ("Expires") WHERE "Expires" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_DeadLetteredAt"
ON "Zeb]ra ""x"" 'y'"."NimbusBodies" ("DeadLetteredAt") WHERE "DeadLetteredAt" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Queue"
ON "Zeb]ra ""x"" 'y'"."NimbusBodies" ("Queue");