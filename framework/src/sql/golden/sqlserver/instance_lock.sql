DECLARE @resource nvarchar(255) = N'Nimbus.Instance:' + @P1;
DECLARE @lock_result int;
EXEC @lock_result = sys.sp_getapplock
    @Resource = @resource,
    @LockMode = N'Exclusive',
    @LockOwner = N'Transaction',
    @LockTimeout = @P2;
IF @lock_result < 0
    THROW 51000, N'Nimbus could not take the instance name lock (sp_getapplock) in time: another process is starting with the same application and instance name.', 1;