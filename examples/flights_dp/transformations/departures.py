"""wid's windows over the landed departures (`python examples/flights_stream.py`
fills the landing directory): declared by `wid.pipelines.declarative.window_datasets`
when `spark-pipelines` loads this file, with `spark`, the pipeline's session."""

from pathlib import Path

import wid
from wid.pipelines.declarative import window_datasets

OUT = Path(__file__).resolve().parents[3] / "out"
LANDING = spark.conf.get("flights.landing", (OUT / "landing" / "flights").as_uri())
HOURLY_JSON = spark.conf.get("flights.hourly_json", (OUT / "flights-pipeline" / "hourly-json").as_uri())
SCHEMA = "origin STRING, carrier STRING, dep_delay DOUBLE, dep_ts_ms BIGINT"
DEPARTURES = [wid.Aggregation("count", as_="departures"), wid.Aggregation("avg", "dep_delay", as_="avg_dep_delay_min")]

# The stream: departures and mean delay per origin and hour, each hour once, final, when the watermark
# (30 minutes behind the latest departure) passes its end; cancelled flights (no departure time) are
# dead letters, and departures later than that are dropped and counted. Also as JSON lines, for
# whoever reads files.
hourly = wid.Window.tumbling(duration="1 hour", event_time_column="dep_ts_ms", event_time_unit="ms",
                             group_by=["origin"], lateness="30 minutes", max_groups_per_window=100,
                             aggregations=DEPARTURES)
stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", "4").json(LANDING)
window_datasets("departures_hourly", stream, hourly, sink_format="json", sink_options={"path": HOURLY_JSON})

# The same count per carrier, updated at every micro-batch while its hour is open (emit on_update;
# is_final says which values are final): carriers_hourly_changes holds every update, the
# materialized view carriers_hourly the latest of each window.
live = wid.Window.tumbling(duration="1 hour", event_time_column="dep_ts_ms", event_time_unit="ms",
                           group_by=["carrier"], lateness="30 minutes", max_groups_per_window=100,
                           emit="on_update", aggregations=DEPARTURES)
window_datasets("carriers_hourly", stream, live)

# The report: the same departures per New York calendar day (23 or 25 hours at a daylight-saving
# change), recomputed from every landed file by wid's batch plans at each run.
daily = wid.Window.tumbling(duration="1 day", time_zone="America/New_York", window_label_column="day",
                            event_time_column="dep_ts_ms", event_time_unit="ms", group_by=["origin"],
                            aggregations=DEPARTURES)
window_datasets("departures_daily", spark.read.schema(SCHEMA).json(LANDING), daily)
