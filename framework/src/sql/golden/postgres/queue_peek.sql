SELECT COALESCE(
    (SELECT "RowVersion" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
     ORDER BY "RowVersion" DESC LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    - (SELECT "RowVersion" FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
       ORDER BY "RowVersion" LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    + 1, 0)::bigint AS "Estimate"