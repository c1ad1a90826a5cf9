CREATE TABLE IF NOT EXISTS "Zeb]ra ""x"" 'y'"."NimbusInstances" (
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