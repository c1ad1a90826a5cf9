-- Takes the application lock that serializes the starts of buses with one application and
-- instance name, until the transaction ends, so that two processes starting at once cannot both
-- find the name free; waits at most the time given, then fails rather than hang.
-- Parameters: 1 the application and instance name (nvarchar(255), passed as the value @P1),
-- 2 the longest wait in milliseconds (int, passed as the value @P2)
DECLARE @resource nvarchar(255) = N'Nimbus.Instance:' + @P1;
DECLARE @lock_result int;
EXEC @lock_result = sys.sp_getapplock
    @Resource = @resource,
    @LockMode = N'Exclusive',
    @LockOwner = N'Transaction',
    @LockTimeout = @P2;
IF @lock_result < 0
    THROW 51000, N'Nimbus could not take the instance name lock (sp_getapplock) in time: another process is starting with the same application and instance name.', 1;
