ALTER TABLE "it's [Wal]] ""rus""" ADD COLUMN "GroupKey" TEXT NULL;
ALTER TABLE "it's [Wal]] ""rus""" ADD COLUMN "GroupPosition" INTEGER NULL;
ALTER TABLE "it's [Wal]] ""rus""" ADD COLUMN "NotBefore" TEXT NULL;