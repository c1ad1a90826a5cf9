-- Runs an index creation statement only when the index is missing.
-- Parameters: none
-- SQLite index statements already say IF NOT EXISTS, so the statement runs as it is.
{statement}
