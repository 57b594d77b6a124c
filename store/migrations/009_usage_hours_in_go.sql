-- usage_hours is kept by the store's writes (store.writeUsage), which add
-- up a batch's records per hour and model before writing: a trigger per
-- record cost an import more than the records themselves.
DROP TRIGGER usage_records_add;
DROP TRIGGER usage_records_remove;
