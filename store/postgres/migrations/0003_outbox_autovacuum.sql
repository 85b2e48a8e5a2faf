-- The outbox is a queue: each row is inserted once and deleted once, soon
-- after. Its dead rows slow every read of its head until a vacuum removes
-- them, so autovacuum should not wait for 20% of a table that is almost
-- always nearly empty: it vacuums the outbox once 2,000 rows died. (The
-- relay also vacuums it itself, more often, when its role owns the table:
-- autovacuum visits a database at most once per autovacuum_naptime.)
ALTER TABLE outbox SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0
);
