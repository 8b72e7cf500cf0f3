-- runs_by_id is filled by the engine from every insert into runs: the same rows the writer sent as a
-- second insert of its own (the key, trace_id, dotted_order, version and is_deleted of each version,
-- a moved run's delete marker included). One statement per writer batch instead of two, no second
-- body to build and parse, and no run row without its locator row: the view's insert is part of the
-- insert into runs, and a failure of either fails it (the writer then writes the batch again).
CREATE MATERIALIZED VIEW IF NOT EXISTS runs_by_id_from_runs TO runs_by_id AS
SELECT tenant_id, id, session_id, start_time, trace_id, dotted_order, version, is_deleted FROM runs;
