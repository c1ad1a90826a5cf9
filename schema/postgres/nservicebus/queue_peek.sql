-- Estimates a queue table's depth as max(Seq) - min(Seq) + 1 over the rows no other transaction
-- holds (0 when none), as NServiceBus's PeekText does, under the weakest lock SKIP LOCKED can test
-- with (FOR KEY SHARE), held on the two end rows for the statement only.
-- Parameters: none
-- Returns: Estimate (bigint)
SELECT COALESCE(
    (SELECT Seq FROM {table}
     ORDER BY Seq DESC LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    - (SELECT Seq FROM {table}
       ORDER BY Seq LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    + 1, 0)::bigint AS "Estimate"
