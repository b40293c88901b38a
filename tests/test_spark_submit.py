"""`wid run` launched by ``spark-submit`` (wid/__main__.py as the script):
spark-submit's ``--master`` holds over the pipeline's ``[spark] master``,
and the run writes the streaming oracle's windows. The master a query ran
on is read from its checkpoint: wid defaults the shuffle partitions of a
local master to its cores, and Spark logs them with every micro-batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark

import wid.__main__
from tests.fixtures import good_rows, land, pipeline_toml, stamped
from tests.sink_check import assert_same_rows, folded, read_table
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import load_pipeline


def test_spark_submit_master_holds_over_the_pipelines(tmp_path: Path) -> None:
    rows = good_rows(30)
    files = [rows[i:i + 10] for i in range(0, 30, 10)]
    land(tmp_path / "land", [[json.dumps(r) for r in f] for f in files])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="submitted").replace(
        'master = "local[2]"\nconf = { "spark.sql.shuffle.partitions" = "2", "spark.ui.enabled" = "false" }',
        'master = "local[1]"')
    (tmp_path / "pipeline.toml").write_text(text)
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    done = subprocess.run([str(submit), "--master", "local[2]", wid.__main__.__file__, "run", "--quiet",
                           "pipeline.toml"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    logged = json.loads((tmp_path / "submitted.checkpoint" / "offsets" / "0").read_text().splitlines()[1])
    assert logged["conf"]["spark.sql.shuffle.partitions"] == "2"  # local[2], spark-submit's, not the TOML's local[1]
    spec = load_pipeline(tmp_path / "pipeline.toml")
    written = read_table(str(tmp_path / "out.sqlite"), "windows")
    results = run_stream(stamped(files), spec.window)
    assert_same_rows(spec.window, written, folded(spec.window, results, list(written[0])))
