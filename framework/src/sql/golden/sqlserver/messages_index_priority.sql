CREATE NONCLUSTERED INDEX [IX_NimbusMessages_Priority]
    ON [Zeb]]ra "x" 'y'].[NimbusMessages] ([Destination] ASC, [Priority] DESC, [VisibleAfter] ASC, [MessageId] ASC)