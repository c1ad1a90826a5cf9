INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusBodies" ("Id", "Queue", "Body", "Store", "Size", "Expires")
VALUES ($1, $2, $3, $4, $5,
    COALESCE($7::timestamp,
        CASE WHEN $6::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $6::bigint * interval '1 millisecond' END))