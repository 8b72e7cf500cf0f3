-- Runs: one row per run version. The writer merges every POST and PATCH of a run and writes the
-- whole merged row with a higher version; ReplacingMergeTree keeps the newest. The sorting key
-- never changes between versions of a run (a moved run gets a tombstone at its old key).
CREATE TABLE IF NOT EXISTS runs
(
    tenant_id UUID,
    session_id UUID,
    id UUID,
    trace_id UUID,
    parent_run_id Nullable(UUID),
    parent_run_ids Array(UUID),
    reference_example_id Nullable(UUID),
    name String,
    run_type LowCardinality(String),
    start_time DateTime64(6, 'UTC'),
    end_time Nullable(DateTime64(6, 'UTC')),
    status LowCardinality(String),
    is_root Bool,
    dotted_order String,
    trace_tier LowCardinality(String),
    inputs String CODEC(ZSTD(1)),
    outputs String CODEC(ZSTD(1)),
    error Nullable(String) CODEC(ZSTD(1)),
    extra String CODEC(ZSTD(1)),
    events String CODEC(ZSTD(1)),
    serialized String CODEC(ZSTD(1)),
    tags Array(String),
    metadata Map(String, String),
    feedback_stats String,
    total_tokens UInt64,
    prompt_tokens UInt64,
    completion_tokens UInt64,
    total_cost Nullable(Float64),
    prompt_cost Nullable(Float64),
    completion_cost Nullable(Float64),
    first_token_time Nullable(DateTime64(6, 'UTC')),
    attachments String,
    merge_state String CODEC(ZSTD(1)),
    received_at DateTime64(6, 'UTC'),
    version UInt64,
    is_deleted UInt8,
    INDEX idx_trace trace_id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(version, is_deleted)
PARTITION BY toYYYYMM(start_time)
ORDER BY (tenant_id, session_id, start_time, id)
-- Adaptive granules of at most 1 MiB: a point read (GET by id) decompresses little of the wide columns.
SETTINGS index_granularity = 8192, index_granularity_bytes = 1048576;

-- Attachments sent with multipart ingest, keyed by run.
CREATE TABLE IF NOT EXISTS run_attachments
(
    tenant_id UUID,
    run_id UUID,
    name String,
    mime_type String,
    data String CODEC(ZSTD(1)),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, run_id, name);
