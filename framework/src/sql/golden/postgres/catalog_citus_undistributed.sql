SELECT 1
WHERE EXISTS (
    SELECT 1 FROM pg_catalog.pg_dist_node AS node
    WHERE node.noderole = 'primary' AND node.isactive AND node.groupid <> 0)
  AND NOT EXISTS (
    SELECT 1 FROM pg_catalog.pg_dist_schema AS distributed
    JOIN pg_catalog.pg_namespace AS n ON n.oid = distributed.schemaid
    WHERE n.nspname = $1)
  AND NOT EXISTS (
    SELECT 1 FROM pg_catalog.pg_dist_partition AS partition
    JOIN pg_catalog.pg_class AS c ON c.oid = partition.logicalrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE n.nspname = $1)