-- Runs just before the receive commits when a handler ran its own statements: SQL Server keeps
-- savepoints until the transaction ends (there is no RELEASE), so this only checks that those
-- statements left the transaction able to commit (XACT_STATE() = 1); otherwise it fails, and the
-- attempt is counted as failed instead of committing nothing.
-- Parameters: none
IF XACT_STATE() <> 1 THROW 51000, N'the handler''s statements left the receive''s transaction unable to commit', 1;
