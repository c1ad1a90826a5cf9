-- Adds IdleSeconds to NimbusSubscriptions: the idle period (auto_delete_on_idle, in seconds) the
-- subscriber promised, so that publishers and sweepers judge each subscription by its own
-- subscriber's setting, not theirs. Rows from before it keep NULL and are judged by the reader's.
-- Parameters: none
ALTER TABLE {schema}."NimbusSubscriptions"
ADD COLUMN IF NOT EXISTS "IdleSeconds" bigint NULL;
