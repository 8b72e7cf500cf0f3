-- Retention: each run row carries expires_at, set by the writer from the run's trace_tier and the
-- workspace's TTL settings (start_time + days); rows without a retention get ClickHouse's last date.
-- ClickHouse drops expired rows when it merges parts (and on OPTIMIZE ... FINAL).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS expires_at DateTime('UTC') DEFAULT toDateTime('2106-01-01 00:00:00', 'UTC');
ALTER TABLE runs MODIFY TTL expires_at SETTINGS materialize_ttl_after_modify = 0;
