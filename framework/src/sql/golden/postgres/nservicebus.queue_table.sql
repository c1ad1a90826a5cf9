CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" (
    Id uuid NOT NULL PRIMARY KEY,
    Expires TIMESTAMP,
    Headers TEXT NOT NULL,
    Body BYTEA,
    Seq serial NOT NULL UNIQUE
);