SELECT COALESCE(max("RowVersion") - min("RowVersion") + 1, 0)::bigint AS "Estimate"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""