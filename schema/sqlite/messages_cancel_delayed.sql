-- Deletes a delayed message of the shared-table layout while it is not yet visible: 1 row when it was pending, 0 when it was visible already (delivered) or never existed.
-- Parameters: 1 MessageId (text)
DELETE FROM "NimbusMessages"
WHERE "MessageId" = ?1 AND "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')
