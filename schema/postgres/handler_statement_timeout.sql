-- Bounds every later statement of the receive's transaction (a handler's own, then the sends and the commit) by the server's own clock: a statement past the deadline is cancelled by the server (SQLSTATE 57014), which releases its locks at once, instead of running on after the client gave up on it. Runs once, when a handler first asks for the receive's connection.
-- Parameters: 1 the deadline in milliseconds (text)
SELECT set_config('statement_timeout', $1, true)
