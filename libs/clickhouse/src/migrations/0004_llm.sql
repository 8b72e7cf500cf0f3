-- LLM runs: what the writer derives from an LLM run (formats, the normalized messages, provider/model,
-- where tokens and costs came from, validation problems of the spec's message format), as JSON.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS llm String DEFAULT '' CODEC(ZSTD(1));

-- Model price maps of a workspace (the default table ships in code). The writer reads them when it
-- prices an LLM run; one row per version, the newest wins, deletes are tombstones.
CREATE TABLE IF NOT EXISTS model_price_map
(
    tenant_id UUID,
    id UUID,
    name String,
    match_pattern String,
    provider Nullable(String),
    prompt_cost Float64,
    completion_cost Float64,
    prompt_cost_details String,
    completion_cost_details String,
    start_time Nullable(DateTime64(6, 'UTC')),
    match_path Array(String),
    created_at DateTime64(6, 'UTC'),
    modified_at DateTime64(6, 'UTC'),
    version UInt64,
    is_deleted UInt8
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (tenant_id, id);
