-- Feedback configs of a workspace: one per feedback key; POST /feedback without its own
-- feedback_config is checked against the stored one. One row per version, the newest wins,
-- deletes are tombstones.
CREATE TABLE IF NOT EXISTS feedback_configs
(
    tenant_id UUID,
    feedback_key String,
    feedback_config String,
    is_lower_score_better Nullable(UInt8),
    modified_at DateTime64(6, 'UTC'),
    version UInt64,
    is_deleted UInt8
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (tenant_id, feedback_key);
