INSERT INTO "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" (Id, Expires, Headers, Body)
VALUES
($1,
    COALESCE($5::timestamp,
        CASE WHEN $2::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $2::bigint * interval '1 millisecond' END),
    $3, $4),
($6,
    COALESCE($10::timestamp,
        CASE WHEN $7::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $7::bigint * interval '1 millisecond' END),
    $8, $9),
($11,
    COALESCE($15::timestamp,
        CASE WHEN $12::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $12::bigint * interval '1 millisecond' END),
    $13, $14)