-- Where each version of a run lives in `runs` (its sorting key), ordered by run id: id lookups
-- (the writer's merge, GET /runs/{id}, parents of new runs) are primary-key reads that stay fast
-- however large `runs` grows. One row per (run, sorting key); a moved run's old key gets
-- is_deleted = 1. The writer inserts here before it inserts the run rows.
CREATE TABLE IF NOT EXISTS run_locator
(
    tenant_id UUID,
    id UUID,
    session_id UUID,
    start_time DateTime64(6, 'UTC'),
    trace_id UUID,
    dotted_order String,
    version UInt64,
    is_deleted UInt8
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, id, session_id, start_time)
-- Small granules: lookups of scattered ids read little.
SETTINGS index_granularity = 1024;

-- Runs written before this table existed get their locator rows once.
INSERT INTO run_locator (tenant_id, id, session_id, start_time, trace_id, dotted_order, version, is_deleted)
SELECT tenant_id, id, session_id, start_time, trace_id, dotted_order, version, 0 FROM runs FINAL;
