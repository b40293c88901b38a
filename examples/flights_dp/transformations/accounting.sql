-- Every row of both windows accounted for: rows in = rejected + late + aggregated.
CREATE MATERIALIZED VIEW flights_accounting AS
SELECT 'departures_hourly' AS dataset, sum(rows_in) AS rows_in, sum(rows_rejected) AS rows_rejected,
       sum(rows_late_dropped) AS rows_late_dropped, sum(rows_late_dlq) AS rows_late_dlq,
       sum(rows_aggregated) AS rows_aggregated,
       sum(rows_in) = sum(rows_rejected + rows_late_dropped + rows_late_dlq + rows_aggregated) AS identity_holds
FROM departures_hourly_accounting
UNION ALL
SELECT 'departures_daily', sum(rows_in), sum(rows_rejected), sum(rows_late_dropped), sum(rows_late_dlq),
       sum(rows_aggregated),
       sum(rows_in) = sum(rows_rejected + rows_late_dropped + rows_late_dlq + rows_aggregated)
FROM departures_daily_accounting;
