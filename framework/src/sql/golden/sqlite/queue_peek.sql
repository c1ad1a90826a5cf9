SELECT COALESCE(max("RowVersion") - min("RowVersion") + 1, 0) AS "Estimate"
FROM "it's [Wal]] ""rus"""