-- Creates NimbusInstances where missing: one row per start of a bus (an endpoint instance) with
-- its host, process, version, queues and handlers, refreshed by its heartbeat, so operators can
-- tell which processes are alive and a second process cannot take a live instance's name.
-- Parameters: none
CREATE TABLE IF NOT EXISTS "NimbusInstances" (
    "RunId"            TEXT    NOT NULL PRIMARY KEY,
    "Application"      TEXT    NOT NULL,
    "Instance"         TEXT    NOT NULL,
    "Host"             TEXT    NOT NULL,
    "ProcessId"        INTEGER NOT NULL,
    "Version"          TEXT    NOT NULL,
    "Queues"           TEXT    NOT NULL,
    "Handlers"         TEXT    NOT NULL,
    "SharesName"       INTEGER NOT NULL,
    "HeartbeatSeconds" INTEGER NOT NULL,
    "StartedAt"        TEXT    NOT NULL,
    "LastSeenAt"       TEXT    NOT NULL,
    "StoppedAt"        TEXT    NULL
)
