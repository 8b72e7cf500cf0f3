-- Feedback: one row per feedback version. Every write (create, update, delete) carries the whole
-- feedback with a growing version; ReplacingMergeTree keeps the newest per (tenant, run, id), so a
-- re-delivered event is never counted twice. A deletion is the same row with is_deleted = 1.
-- Stats are computed by query (FINAL), never stored, so they cannot drift; feedback may arrive
-- before its run. run_id never changes for a feedback id; project feedback uses the nil UUID.
CREATE TABLE IF NOT EXISTS feedback
(
    tenant_id UUID,
    run_id UUID,
    id UUID,
    trace_id Nullable(UUID),
    session_id Nullable(UUID),
    key String,
    score Nullable(Float64),
    -- The value as filters and value counts see it: strings as they are, other JSON as text, '' for none.
    value String,
    value_json Nullable(String) CODEC(ZSTD(1)),
    comment Nullable(String) CODEC(ZSTD(1)),
    correction_json Nullable(String) CODEC(ZSTD(1)),
    feedback_source String CODEC(ZSTD(1)),
    source_type LowCardinality(String),
    feedback_config String,
    comparative_experiment_id Nullable(UUID),
    feedback_group_id Nullable(UUID),
    created_at DateTime64(6, 'UTC'),
    modified_at DateTime64(6, 'UTC'),
    version UInt64,
    is_deleted UInt8,
    INDEX idx_id id TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_trace trace_id TYPE bloom_filter(0.001) GRANULARITY 4,
    INDEX idx_session session_id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (tenant_id, run_id, id)
SETTINGS index_granularity = 1024;
