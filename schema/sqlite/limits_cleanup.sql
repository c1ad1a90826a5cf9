-- Deletes at most a batch of limit rows untouched for longer than the given seconds (database
-- time): the slots of keys no longer seen. A limit adds its slots again when it next needs
-- them.
-- Parameters: 1 seconds (integer), 2 batch size (integer)
DELETE FROM "NimbusLimits"
WHERE rowid IN (
    SELECT rowid FROM "NimbusLimits"
    WHERE "ReadyAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)
