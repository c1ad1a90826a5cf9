-- Creates NimbusInstances where missing: one row per start of a bus (an endpoint instance) with
-- its host, process, version, queues and handlers, refreshed by its heartbeat, so operators can
-- tell which processes are alive and a second process cannot take a live instance's name.
-- Parameters: none
CREATE TABLE IF NOT EXISTS {schema}."NimbusInstances" (
    "RunId"            uuid         NOT NULL PRIMARY KEY,
    "Application"      varchar(255) NOT NULL,
    "Instance"         varchar(255) NOT NULL,
    "Host"             varchar(255) NOT NULL,
    "ProcessId"        bigint       NOT NULL,
    "Version"          varchar(64)  NOT NULL,
    "Queues"           text         NOT NULL,
    "Handlers"         text         NOT NULL,
    "SharesName"       integer      NOT NULL,
    "HeartbeatSeconds" integer      NOT NULL,
    "StartedAt"        timestamp    NOT NULL,
    "LastSeenAt"       timestamp    NOT NULL,
    "StoppedAt"        timestamp    NULL
)
