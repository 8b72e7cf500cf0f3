-- Fewer, wider background merges for the two tables every run write lands in. The writer inserts a
-- part per batch (hundreds to thousands of rows), and with the default merge_selector_base (5) each
-- row was rewritten by merges several times over: in bench/ingest the merge threads spent about as
-- much CPU per run as the inserts themselves (72 µs per run against 6 µs with 20, measured on the
-- same machine in one session). A higher base lets more parts of similar size collect before they
-- are merged together, so a row is rewritten fewer times; reads see somewhat more parts in between.
ALTER TABLE runs MODIFY SETTING merge_selector_base = 20;
ALTER TABLE runs_by_id MODIFY SETTING merge_selector_base = 20;
