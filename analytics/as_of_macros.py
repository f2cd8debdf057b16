"""SQL as-of: table macros giving each product's and job's state as the ledger knew it at a time.

    SELECT * FROM product_as_of(TIMESTAMPTZ '2026-03-01 12:00:00+00');
    SELECT * FROM job_as_of('2026-03-01T12:00:00Z') WHERE consecutive_failures > 0;

They are created with the views (`analytics.views.view_statements`), so they work in
the `analytics sql` sandbox, on `connect()` and in the DuckDB CLI (`views.sql`), and
agree with `products show --as-of` / `jobs show --as-of` (which replay the aggregate
from the events recorded by then; every event's time is its command's time, which is
the `observed_at`, `occurred_at`, `finished_at` and `changed_at` the datasets carry).

`product_as_of(ts)`: one row per offer (pricing type, option) of each product's last
observation at or before `ts` (the aggregate's offers are its last observation's),
with the product's `in_stock` / `out_of_stock_since` (its last `went_out_of_stock` /
`back_in_stock` by then), `consecutive_misses` (its last `missed` after that
observation, else 0), `observations` (how many by then) and `last_seen_at`.
Name, brand and category are as known at the observation.

`job_as_of(ts)`: one row per job recorded by `ts`: its `state`, `state_since` and
`next_run_at` (its last `job_states` row at or before `ts`), and from its finished runs
by then (`job_runs`; 0 and nulls without any): `runs` (succeeded, failed or expired
attempts, as the aggregate counts them), `succeeded`, `failures`,
`consecutive_failures` (since the last success), and the last run's `last_outcome`,
`last_finished_at`, `last_error_kind`, `last_error` (the aggregate's `"kind: message"`
for a failure or an expired lease), `last_http_status`, `last_items`.
"""

from __future__ import annotations

__all__ = ["AS_OF_MACROS"]

PRODUCT_AS_OF = """
CREATE OR REPLACE MACRO product_as_of(ts) AS TABLE
WITH seen AS (
    SELECT * EXCLUDE (date) FROM price_observations
    WHERE observed_at <= CAST(ts AS TIMESTAMPTZ)
      AND date <= CAST(timezone('UTC', CAST(ts AS TIMESTAMPTZ)) AS DATE)
), last_seen AS (
    SELECT product_id, arg_max(event_id, (observed_at, position)) AS event_id,
           max(observed_at) AS last_seen_at, count(DISTINCT event_id) AS observations
    FROM seen GROUP BY product_id
), stock AS (
    SELECT product_id,
           arg_max(event_type, (occurred_at, position))
               FILTER (WHERE event_type <> 'missed') AS stock_event,
           arg_max(occurred_at, (occurred_at, position))
               FILTER (WHERE event_type <> 'missed') AS stock_at,
           arg_max(consecutive_misses, (occurred_at, position))
               FILTER (WHERE event_type = 'missed') AS misses,
           max(position) FILTER (WHERE event_type = 'missed') AS missed_position
    FROM stock_events
    WHERE occurred_at <= CAST(ts AS TIMESTAMPTZ)
    GROUP BY product_id
)
SELECT CAST(ts AS TIMESTAMPTZ) AS as_of, o.product_id, o.store_id, o.store_name,
       o.provider_product_id, o.name, o.brand, o.category, o.pricing_type, o.option,
       o.price, o.special_price, o.currency, o.availability, o.quantity,
       coalesce(s.stock_event <> 'went_out_of_stock', true) AS in_stock,
       CASE WHEN s.stock_event = 'went_out_of_stock' THEN s.stock_at END AS out_of_stock_since,
       CASE WHEN s.missed_position > o.position THEN s.misses ELSE 0 END AS consecutive_misses,
       l.observations, l.last_seen_at, o.job_id, o.event_id, o.position
FROM seen o
JOIN last_seen l ON o.product_id = l.product_id AND o.event_id = l.event_id
LEFT JOIN stock s ON s.product_id = o.product_id
ORDER BY o.product_id, o.pricing_type, o.option
"""

JOB_AS_OF = """
CREATE OR REPLACE MACRO job_as_of(ts) AS TABLE
WITH known AS (
    SELECT * FROM job_states
    WHERE changed_at <= CAST(ts AS TIMESTAMPTZ)
      AND date <= CAST(timezone('UTC', CAST(ts AS TIMESTAMPTZ)) AS DATE)
    QUALIFY row_number() OVER (PARTITION BY job_id ORDER BY position DESC) = 1
), finished AS (
    SELECT * FROM job_runs
    WHERE finished_at <= CAST(ts AS TIMESTAMPTZ) AND outcome <> 'cancelled'
), last_success AS (
    SELECT job_id, max(position) FILTER (WHERE outcome = 'succeeded') AS at_position
    FROM finished GROUP BY job_id
), runs AS (
    SELECT f.job_id, count(*) AS runs,
           count(*) FILTER (WHERE f.outcome = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE f.outcome <> 'succeeded') AS failures,
           count(*) FILTER (WHERE f.outcome <> 'succeeded'
                            AND f.position > coalesce(s.at_position, 0)) AS consecutive_failures,
           arg_max(f.outcome, f.position) AS last_outcome,
           max(f.finished_at) AS last_finished_at,
           arg_max_null(f.error_kind, f.position) AS last_error_kind,
           arg_max_null(CASE WHEN f.outcome <> 'succeeded' THEN f.error_kind || ': ' || f.message END,
                   f.position) AS last_error,
           arg_max_null(f.http_status, f.position) AS last_http_status,
           arg_max_null(f.items, f.position) AS last_items
    FROM finished f LEFT JOIN last_success s ON f.job_id = s.job_id
    GROUP BY f.job_id
)
SELECT CAST(ts AS TIMESTAMPTZ) AS as_of, k.job_id, k.kind, k.store_id, k.store_name,
       k.state, k.state_since, k.next_run_at,
       coalesce(r.runs, 0) AS runs, coalesce(r.succeeded, 0) AS succeeded,
       coalesce(r.failures, 0) AS failures,
       coalesce(r.consecutive_failures, 0) AS consecutive_failures,
       r.last_outcome, r.last_finished_at, r.last_error_kind, r.last_error,
       r.last_http_status, r.last_items
FROM known k LEFT JOIN runs r ON r.job_id = k.job_id
ORDER BY k.job_id
"""

AS_OF_MACROS = (PRODUCT_AS_OF.strip(), JOB_AS_OF.strip())
