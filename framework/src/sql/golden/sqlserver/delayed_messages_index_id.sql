CREATE INDEX [NimbusDelayedMessages_Index_Id]
    ON [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] ([Id]);