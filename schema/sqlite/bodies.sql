-- Creates NimbusBodies (message bodies stored apart from their queue rows by the claim check:
-- the queue row carries the body's Id in its Nimbus.ClaimCheck header) where it is missing.
-- Body is NULL when the body is in an object store (Store names it).
-- Queue is where its message was written; Expires its message's; DeadLetteredAt is set while
-- its message is a dead letter.
-- Parameters: none
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
