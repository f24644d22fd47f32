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

CREATE OR REPLACE VIEW reconciliation AS
SELECT s.source, sum(s.n_read) AS n_read, sum(s.n_loaded) AS n_loaded, sum(s.n_rejected) AS n_rejected,
       sum(s.n_read) = sum(s.n_loaded) + sum(s.n_rejected) AS reconciled
FROM sources s GROUP BY s.source ORDER BY s.source;
