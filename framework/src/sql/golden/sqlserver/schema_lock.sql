DECLARE @resource nvarchar(255) = N'Nimbus.Schema:' + @P1;
DECLARE @lock_result int;
EXEC @lock_result = sys.sp_getapplock
    @Resource = @resource,
    @LockMode = N'Exclusive',
    @LockOwner = N'Transaction',
    @LockTimeout = @P2;
IF @lock_result < 0
    THROW 51000, N'Nimbus could not take the schema creation lock (sp_getapplock) in time: another instance holds it while it creates or upgrades this schema.', 1;