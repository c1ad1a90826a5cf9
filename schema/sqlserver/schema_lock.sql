-- Takes the application lock that serializes schema creation in one schema across instances, until the transaction ends; waits at most the time given, then fails rather than hang.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 the longest wait in milliseconds (int, passed as the value @P2)
-- Auto-create takes it only when something is missing (a start on a complete schema reads the
-- catalog and takes no lock), and per schema, so starts in other schemas never wait for it. The
-- wait is shorter than the statement's deadline, so a waiter fails with this error, which says
-- what it waited for. sp_getapplock compares resource names as binary strings.
DECLARE @resource nvarchar(255) = N'Nimbus.Schema:' + @P1;
DECLARE @lock_result int;
EXEC @lock_result = sys.sp_getapplock
    @Resource = @resource,
    @LockMode = N'Exclusive',
    @LockOwner = N'Transaction',
    @LockTimeout = @P2;
IF @lock_result < 0
    THROW 51000, N'Nimbus could not take the schema creation lock (sp_getapplock) in time: another instance holds it while it creates or upgrades this schema.', 1;
