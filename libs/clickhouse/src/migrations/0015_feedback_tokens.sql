-- Presigned feedback tokens (POST /feedback/tokens): each lets anyone holding it add feedback with one key
-- to one run until it expires. Only the token's SHA-256 is stored, so a leaked table grants nothing.
CREATE TABLE IF NOT EXISTS feedback_tokens
(
    token_hash String,
    tenant_id UUID,
    run_id UUID,
    feedback_key String,
    feedback_config Nullable(String),
    created_at DateTime64(6, 'UTC'),
    expires_at DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY token_hash
TTL toDateTime(expires_at) + INTERVAL 30 DAY;
