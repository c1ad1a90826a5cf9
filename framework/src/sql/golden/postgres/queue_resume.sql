DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusPausedQueues"
WHERE "Queue" = $1