-- Views over the core tables; recreated on every load so they always match the tables.
CREATE OR REPLACE VIEW items_full AS
SELECT i.*, c.context_kind, c.context, c.turns, c.n_agents, c.n_events
FROM items i JOIN contexts c USING (context_id);

CREATE OR REPLACE VIEW per_source AS
SELECT source, any_value(source_version) AS source_version, count(*) AS n_items,
       count(DISTINCT context_id) AS n_contexts, count(DISTINCT split) AS n_splits
FROM items GROUP BY source ORDER BY source;

CREATE OR REPLACE VIEW per_split AS
SELECT source, split, count(*) AS n_items, count(DISTINCT context_id) AS n_contexts
FROM items GROUP BY source, split ORDER BY source, split;

CREATE OR REPLACE VIEW per_question_type AS
SELECT source, question_type, belief_order, answer_format, count(*) AS n_items
FROM items GROUP BY ALL ORDER BY ALL;

CREATE OR REPLACE VIEW rejects_per_reason AS
SELECT source, field, reason, count(*) AS n_rejects
FROM rejects GROUP BY ALL ORDER BY source, n_rejects DESC;

-- Per source, over every load in the ledger (`loads`): read = loaded + rejected, and the items the
-- ledger says must be there (new - removed) against the rows really in `items` (n_items). A source
-- loaded twice, or under two names, shows n_loaded above n_items, and n_new says why.
CREATE OR REPLACE VIEW reconciliation AS
WITH ledger AS (
  SELECT source, count(*) AS n_loads, sum(n_read) AS n_read, sum(n_loaded) AS n_loaded,
         sum(n_rejected) AS n_rejected, sum(n_new) AS n_new, sum(n_changed) AS n_changed,
         sum(n_removed) AS n_removed
  FROM loads GROUP BY source
), present AS (
  SELECT source, count(*) AS n_items FROM items GROUP BY source
)
SELECT source, coalesce(n_loads, 0) AS n_loads, coalesce(n_read, 0) AS n_read, coalesce(n_loaded, 0) AS n_loaded,
       coalesce(n_rejected, 0) AS n_rejected, coalesce(n_new, 0) AS n_new, coalesce(n_changed, 0) AS n_changed,
       coalesce(n_removed, 0) AS n_removed, coalesce(n_items, 0) AS n_items,
       coalesce(n_read = n_loaded + n_rejected AND n_new - n_removed = coalesce(n_items, 0), false) AS reconciled
FROM ledger FULL JOIN present USING (source)
ORDER BY source;
