CREATE NONCLUSTERED INDEX [IX_NimbusMessages_Group]
    ON [Zeb]]ra "x" 'y'].[NimbusMessages] ([Destination] ASC, [GroupKey] ASC, [GroupPlace] ASC, [MessageId] ASC)