INSERT INTO "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" (Id, Expires, Headers, Body)
VALUES ($1,
    COALESCE($5::timestamp,
        CASE WHEN $2::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $2::bigint * interval '1 millisecond' END),
    $3, $4)