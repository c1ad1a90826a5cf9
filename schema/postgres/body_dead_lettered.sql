-- Marks a body stored apart as its message's dead letter's, in the transaction that writes the
-- dead letter: kept for a replay until the dead letters' retention ends, whatever its Expires.
-- Parameters: 1 Id (uuid)
UPDATE {schema}."NimbusBodies" SET "DeadLetteredAt" = (now() AT TIME ZONE 'utc'), "Expires" = NULL WHERE "Id" = $1
