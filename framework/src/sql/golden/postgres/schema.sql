-- Creates the schema Nimbus's tables live in, where it is missing.
-- Parameters: none
CREATE SCHEMA IF NOT EXISTS "Zeb]ra ""x"" 'y'";
