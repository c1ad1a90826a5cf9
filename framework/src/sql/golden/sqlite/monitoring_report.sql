INSERT INTO "NimbusMonitoring" ("ReportedAt", "RunId", "Queue", "Application", "Instance",
    "PeriodMs", "Handled", "Failed", "Retried", "DeadLettered", "QueueLength",
    "ProcessingP50Us", "ProcessingP95Us", "CriticalP50Us", "CriticalP95Us", "ProcessingTimes",
    "CriticalTimes")
VALUES (strftime('%Y-%m-%d %H:%M:%f', 'now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)