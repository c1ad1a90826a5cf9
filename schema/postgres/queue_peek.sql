-- Estimates a queue table's depth as max(RowVersion) - min(RowVersion) + 1 over the rows no other transaction holds (0 when none).
-- Parameters: none
-- Returns: Estimate (bigint)
-- Both ends skip the rows receives hold (theirs and other instances'): counted, they would send
-- idle receivers after rows nobody can take, a round of empty DELETEs per peek. FOR KEY SHARE is
-- the weakest lock SKIP LOCKED can test with; it holds at most the two end rows, for the
-- statement only, and needs the UPDATE privilege a receiver has anyway.
SELECT COALESCE(
    (SELECT "RowVersion" FROM {table}
     ORDER BY "RowVersion" DESC LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    - (SELECT "RowVersion" FROM {table}
       ORDER BY "RowVersion" LIMIT 1 FOR KEY SHARE SKIP LOCKED)
    + 1, 0)::bigint AS "Estimate"
