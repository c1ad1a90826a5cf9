SELECT count(*) AS "Count"
FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""