-- Drops an index of a table, so that it can be created again with the seed's definition; quoted
-- in the warning about an index that is defined otherwise (never run by Nimbus itself).
-- Parameters: none
-- A clustered index is dropped by rewriting the table as a heap: on a large table, plan for the
-- time it takes (WITH (ONLINE = ON) where the edition supports it).
DROP INDEX IF EXISTS {index} ON {table};
