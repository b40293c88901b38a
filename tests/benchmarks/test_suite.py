"""The side-by-side harness reports what happened: a disagreeing engine gets
no ratio, a missing peer is "not run" with its fix, and the ratio is the
engine's median over wid's."""

from __future__ import annotations

import pandas as pd

from benchmarks import suite
from benchmarks.__main__ import SCENARIOS, main


def fixed(name: str, runs_s: list[float], output: pd.DataFrame | None) -> suite.Engine:
    return suite.Engine(name, lambda _repeats: suite.Run(name, list(runs_s), output))


def test_run_scenario_ratios_agreement_and_missing_peers() -> None:
    truth = pd.DataFrame({"k": [1, 2, 3], "n": [4, 5, 6], "s": [0.5, 1.5, 2.5]})
    wrong = truth.assign(n=[4, 5, 7])

    def missing(_repeats: int) -> suite.Run:
        raise suite.Unavailable("pip install -e '.[bench]'")

    s = suite.Scenario("t", "test", 100, ("k",), [
        fixed("wid", [1.0, 2.0, 3.0], truth), fixed("same", [4.0, 4.0, 5.0], truth.iloc[::-1]),
        fixed("wrong", [0.1, 0.1, 0.1], wrong), suite.Engine("absent", missing)])
    record = {e["engine"]: e for e in suite.run_scenario(s, 3)["engines"]}
    assert record["wid"]["median_s"] == 2.0 and record["wid"]["rows_per_s"] == 50.0
    assert record["same"]["agrees"] is True and record["same"]["ratio_to_wid"] == 2.0
    assert record["same"]["checksum"] == record["wid"]["checksum"]
    assert record["wrong"]["agrees"] is False and record["wrong"]["ratio_to_wid"] is None
    assert "DISAGREES" in record["wrong"]["note"] and "column n" in record["wrong"]["note"]
    assert record["absent"]["median_s"] is None and "pip install" in record["absent"]["note"]


def test_every_scenario_module_loads(capsys: object) -> None:
    assert main(["list"]) == 0
    listed = capsys.readouterr().out.split("\n")  # type: ignore[attr-defined]
    assert [line.split()[0] for line in listed if line] == list(SCENARIOS)


def test_in_process_engines_warm_up_first_then_take_turns() -> None:
    # a JVM warmed by the first engine's timed runs would favour the engines timed after it, and the
    # first of a round runs slower than the next: each round starts one engine later
    calls: list[tuple[str, bool]] = []
    truth = pd.DataFrame({"k": [1], "n": [2]})

    def run_of(name: str) -> suite.Engine:
        def run(collect: bool) -> pd.DataFrame | None:
            calls.append((name, collect))
            return truth if collect else None
        return suite.engine(name, run)

    record = suite.run_scenario(suite.Scenario("t", "test", 1, ("k",), [run_of("wid"), run_of("peer")]), 3)
    assert calls == [("wid", True), ("peer", True), ("wid", False), ("peer", False), ("peer", False), ("wid", False),
                     ("wid", False), ("peer", False)]
    assert [len(e["runs_s"]) for e in record["engines"]] == [3, 3]
    assert record["engines"][1]["agrees"] is True


def test_short_runs_get_more_rounds_up_to_a_bound() -> None:
    # runs of microseconds never add up to a second: the rounds stop at the bound
    runs = suite.in_turns([("a", lambda collect: None), ("b", lambda collect: None)], 2, least_s=1.0)
    assert [len(r.runs_s) for r in runs] == [2 * suite.ROUNDS_UP_TO] * 2
    assert [len(r.runs_s) for r in suite.in_turns([("a", lambda collect: None)], 2)] == [2]
