DECLARE @lock_result int;
EXEC @lock_result = sys.sp_getapplock
    @Resource = N'Nimbus.Schema',
    @LockMode = N'Exclusive',
    @LockOwner = N'Transaction',
    @LockTimeout = 60000;
IF @lock_result < 0
    THROW 51000, N'Nimbus could not take the schema creation lock (sp_getapplock) within 60 s.', 1;