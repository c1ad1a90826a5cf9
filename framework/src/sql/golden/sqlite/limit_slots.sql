WITH RECURSIVE "n" ("Slot") AS (
    SELECT -1
    UNION ALL
    SELECT "Slot" + 1 FROM "n" WHERE "Slot" + 1 < ?2
)
INSERT OR IGNORE INTO "NimbusLimits" ("Scope", "Slot", "ReadyAt")
SELECT ?1, "Slot", strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 seconds') FROM "n"