"""Coverage compares a generated split with TAU2's tasks by shape only: tool sets (with and without look-ups),
lengths, tools used, conditional behaviours and injected faults; and the generated retail and airline supplies
cover what TAU2 asks."""

import json
import subprocess
import sys

import pytest

import mua_gym
from mua_gym.eval.coverage import behaviours, coverage, format_coverage, tool_set
from mua_gym.task import Action, Task, UserScenario


def _task(tid: str, *names: str, setup: tuple[str, ...] = (), intents=None, prose: str = "") -> Task:
    return Task(id=tid, domain="retail", gold_actions=[Action(name=n) for n in names],
                initial_actions=[Action(name=n, requestor="setup") for n in setup],
                user_scenario=UserScenario(intents=intents or [], instructions=prose))


def test_tool_sets_exact_contained_and_without_lookups():
    ours = [_task("a", "find", "get", "cancel"), _task("b", "find", "get", "cancel", "return"),
            _task("c", "find", "calculate", "return")]
    theirs = [_task("1", "find", "get", "cancel"),  # exact
              _task("2", "cancel", "return"),  # within b; its request set {cancel, return} is b's exactly
              _task("3", "cancel"),  # within a; request set exact (a's)
              _task("4", "transfer_to_human_agents"),  # nowhere
              _task("5")]  # no calls: within every set, and no generated task has none
    report = coverage(ours, theirs, reads={"find", "get"})
    assert report.exact == pytest.approx(1 / 5) and report.contained == pytest.approx(4 / 5)
    assert report.exact_requests == pytest.approx(3 / 5) and report.contained_requests == pytest.approx(4 / 5)
    assert report.missing_tools == ["transfer_to_human_agents"]
    assert (report.generated_length.median, report.generated_length.max) == (3, 4)
    assert report.reference_length.histogram == {0: 1, 1: 2, 2: 1, 3: 1}
    assert tool_set(ours[1], frozenset({"find", "get"})) == {"cancel", "return"}
    assert [s for s, _ in report.uncovered_requests] == [[], ["transfer_to_human_agents"]]


def test_behaviours_are_read_from_intents_or_from_conditional_prose():
    assert behaviours(_task("a", intents=[{"withhold": {"order_id": "asked_twice"}}, {"on_confirm": {"says": "x"}}])) \
        == {"withhold", "on_confirm"}
    assert behaviours(_task("b", prose="If the agent asks you to confirm, say no.")) == {"prose"}
    assert behaviours(_task("c", prose="You want to return the lamp.")) == set()
    report = coverage([_task("a", intents=[{"first_says": {"order_id": "#W1"}}])], [_task("b", prose="only if asked")])
    assert (report.conditional_generated, report.conditional_reference) == (1, 1)
    assert report.behaviour_counts == {"first_says": 1}


def test_faults_are_compared_one_by_one_and_as_combinations():
    ours = [_task("a", setup=("airplane_on",)), _task("b", setup=("airplane_on", "sim_out"))]
    theirs = [_task("1", setup=("airplane_on", "sim_out")), _task("2", setup=("sim_out", "data_off"))]
    report = coverage(ours, theirs)
    assert (report.faults, report.faults_covered) == (3, 2)
    assert report.fault_families_covered == pytest.approx(0.5)
    assert report.missing_fault_families == [["data_off", "sim_out"]]
    assert "1 of" not in format_coverage(report) and "2 of 3" in format_coverage(report)


@pytest.mark.parametrize("domain, least", [("retail", 0.9), ("airline", 0.9)])
def test_the_generated_supply_covers_what_tau2_asks(domain, least):
    """The targets of the training supply: TAU2's request sets, calculate and transfers, TAU2's longest tasks."""
    found = mua_gym.get_domain(domain)
    ours = found.tasks("train")
    theirs = [t for s in ("train", "test") for t in found.tasks(s, "tau2")]
    report = coverage(ours, theirs, [n for n in found.tools.tools if found.tools[n].kind == "read"])
    assert report.exact_requests >= least and report.contained >= 0.9
    assert report.missing_tools == []
    assert report.generated_length.max >= report.reference_length.max * 0.9
    top = report.by_difficulty[max(report.by_difficulty)]
    assert top["conditional"] * 3 >= top["tasks"]


def test_the_command_prints_the_table_and_json():
    shown = subprocess.run([sys.executable, "-m", "mua_gym.cli", "tasks", "--coverage", "--env", "mua/Telecom-v0"],
                           capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0, shown.stderr
    assert "TAU2's faults (set-up calls) that train split injects" in shown.stdout
    raw = subprocess.run([sys.executable, "-m", "mua_gym.cli", "tasks", "--coverage", "--json", "--env",
                          "mua/Airline-v0", "--split", "test"], capture_output=True, text=True, timeout=600)
    report = json.loads(raw.stdout)
    assert report["generated"] == 150 and report["reference"] == 50 and report["missing_tools"] == []
    bad = subprocess.run([sys.executable, "-m", "mua_gym.cli", "tasks", "--coverage", "--env", "mua/Mock-v0"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "no TAU2 tasks" in bad.stderr
