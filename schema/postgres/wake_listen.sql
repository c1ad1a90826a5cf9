-- Listens for the announcements of queues that got messages, on the connection a bus keeps for
-- wake-ups (see wake_announce.sql). The channel's name is fixed: every Nimbus bus uses it.
-- Parameters: none
LISTEN nimbus
