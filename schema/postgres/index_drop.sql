-- Drops an index of a table, so that it can be created again with the seed's definition; quoted
-- in the warning about an index that is defined otherwise (never run by Nimbus itself).
-- Parameters: none
DROP INDEX IF EXISTS {schema}.{index};
