CREATE TABLE IF NOT EXISTS "NimbusBodies" (
    "Id"             TEXT    NOT NULL PRIMARY KEY,
    "Queue"          TEXT    NOT NULL,
    "Body"           BLOB    NULL,
    "Store"          TEXT    NULL,
    "Size"           INTEGER NOT NULL,
    "StoredAt"       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
    "Expires"        TEXT    NULL,
    "DeadLetteredAt" TEXT    NULL
);
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Expires" ON "NimbusBodies" ("Expires");
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_DeadLetteredAt" ON "NimbusBodies" ("DeadLetteredAt");
CREATE INDEX IF NOT EXISTS "NimbusBodies_Index_Queue" ON "NimbusBodies" ("Queue");