SELECT COALESCE(
    (SELECT Seq FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
     ORDER BY Seq DESC LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    - (SELECT Seq FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
       ORDER BY Seq LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    + 1, 0)::bigint AS "Estimate"