SELECT count(*) AS "Count"
FROM "it's [Wal]] ""rus"""