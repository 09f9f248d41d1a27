"""Telecom on our own worlds and tasks: the seeded world generator, the fault-combination task generator, and the
oracle with the rule-driven user through the env."""

import collections
import sqlite3

import pytest
from episodes import idle, play
from mua_gym.domains.telecom.generate import build_generated
from mua_gym.domains.telecom.schema import Base
from mua_gym.domains.telecom.taskgen import FAMILIES, generated_tasks

import mua_gym
from mua_gym import MuaEnv
from mua_gym.eval.agents import OracleAgent
from mua_gym.world.image import WorldImage
from mua_gym.kit.generation import verify_task

TABLES = ("plans", "customers", "customer_payment_methods", "customer_lines", "customer_bills", "lines", "bills",
          "bill_line_items", "devices", "phone", "phone_apps", "surroundings")


@pytest.fixture(scope="module")
def telecom():
    return mua_gym.get_domain("telecom")


@pytest.fixture(scope="module")
def test_tasks(telecom):
    return telecom.tasks("test", "generated")  # verified as they are made (and cached for the env)


@pytest.fixture(scope="module")
def train_tasks(telecom):
    # Not verified here, to keep the suite fast (every gold replay syncs the phone after each call); the default
    # generation verifies every task, and test_tasks above and a sample below are verified.
    return generated_tasks(telecom, "train", verify=False)


def _db(image):
    con = sqlite3.connect(":memory:")
    con.deserialize(image.data)
    return con


def test_generated_world_is_bit_identical_per_seed():
    a = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=2, size="tiny"))
    b = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=2, size="tiny"))
    c = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=5, size="tiny"))
    assert a.data == b.data and a.hash == b.hash and a.hash != c.hash
    d = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=0))
    e = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=0))
    assert d.data == e.data


@pytest.mark.parametrize("size, customers", [("tiny", 5), ("small", 20), ("default", 50), (0.5, 25)])
def test_world_sizes_and_contents(size, customers):
    con = _db(WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=1, size=size)))
    count = lambda t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # noqa: E731
    assert count("customers") == customers and all(count(t) > 0 for t in TABLES)
    assert count("phone") == count("surroundings") == 1
    per_customer = [n for (n,) in con.execute("SELECT COUNT(*) FROM customer_lines GROUP BY customer_id")]
    assert len(per_customer) == customers and set(per_customer) <= {1, 2, 3, 4}
    numbers = [n for (n,) in con.execute("SELECT phone_number FROM lines")]
    assert len(numbers) == len(set(numbers))
    # Nobody's contact number is another customer's line.
    owner = dict(con.execute("SELECT l.phone_number, cl.customer_id FROM lines l JOIN customer_lines cl "
                             "ON cl.line_id = l.line_id"))
    assert all(owner.get(p, c) == c for c, p in con.execute("SELECT customer_id, phone_number FROM customers"))
    for table, column, prefix in (("customers", "customer_id", "C"), ("lines", "line_id", "L"),
                                  ("bills", "bill_id", "B"), ("devices", "device_id", "D"), ("plans", "plan_id", "P")):
        assert all(v.startswith(prefix) for (v,) in con.execute(f"SELECT {column} FROM {table}"))
    # Bill totals are the sums of their items; bills belong to the customer that lists them.
    for bill_id, total in con.execute("SELECT bill_id, total_due FROM bills"):
        items = con.execute("SELECT COALESCE(SUM(amount), 0) FROM bill_line_items WHERE bill_id = ?",
                            (bill_id,)).fetchone()[0]
        assert abs(items - total) < 1e-9
    assert con.execute("SELECT COUNT(*) FROM bills b JOIN customer_bills cb ON cb.bill_id = b.bill_id "
                       "WHERE cb.customer_id != b.customer_id").fetchone()[0] == 0
    # The phone is healthy and nobody is its user yet.
    ph = con.execute("SELECT sim_card_status, airplane_mode, network_connection_status, network_technology_connected, "
                     "data_enabled, apn_name, mmsc_url FROM phone").fetchone()
    assert ph == ("active", 0, "connected", "5G", 1, "internet", "http://mms.carrier.com/mms/wapenc")
    messaging = con.execute("SELECT perm_sms, perm_storage FROM phone_apps WHERE app_name = 'messaging'").fetchone()
    assert messaging == (1, 1)
    assert con.execute("SELECT name, phone_number, signal_5g FROM surroundings").fetchone() == (None, None, "excellent")


def test_default_world_mix(telecom):
    world = telecom.new_world("generated")
    q = world.raw.execute
    assert {s for (s,) in q("SELECT DISTINCT status FROM lines")} >= {"Active", "Suspended"}
    assert [n for (n,) in q("SELECT COUNT(*) FROM lines GROUP BY status ORDER BY COUNT(*) DESC")][0] > 0.7 * \
        q("SELECT COUNT(*) FROM lines").fetchone()[0]
    assert {s for (s,) in q("SELECT DISTINCT status FROM bills")} >= {"Paid", "Issued", "Overdue", "Draft"}
    assert len({r for r in q("SELECT data_limit_gb, price_per_month, data_refueling_price_per_gb FROM plans")}) >= 5
    world.close()
    with pytest.raises(ValueError):
        telecom.new_world("generated", size="enormous")
    with pytest.raises(ValueError):
        telecom.new_world("generated", size=-1)
    assert telecom.default_source == "generated" and {"tau2", "generated"} <= set(telecom.worlds)


def test_counts_splits_families_and_personas(telecom, train_tasks, test_tasks):
    dev = generated_tasks(telecom, "dev", verify=False)
    assert (len(train_tasks), len(dev), len(test_tasks)) == (1000, 150, 150)
    customers = {name: {t.user_scenario.facts["customer_id"] for t in ts}
                 for name, ts in (("train", train_tasks), ("dev", dev), ("test", test_tasks))}
    assert not customers["train"] & customers["dev"] and not customers["train"] & customers["test"]
    assert not customers["dev"] & customers["test"]
    families = collections.Counter(t.category for t in train_tasks)
    assert set(families) == set(FAMILIES) and min(families.values()) >= 60
    assert set(t.category for t in test_tasks) == set(FAMILIES)
    slots = {f.split(":")[0] for t in train_tasks for f in t.user_scenario.facts["faults"].split("|")}
    assert slots == {"airplane", "sim", "apn", "suspension", "roaming", "data_off", "saver", "pref", "vpn",
                     "wifi_calling", "permission", "usage"}
    traps = [t for t in train_tasks if t.user_scenario.facts["trap"]]
    assert {t.user_scenario.facts["trap"] for t in traps} == {"sim", "suspension"}
    # A trap is paid for the hand-off with its reason told: what the SIM is locked with, or when the contract ended.
    assert all(t.evaluation.reward_basis == ["ENV_ASSERTION", "ACTION", "COMMUNICATE"] and t.difficulty == 3 and
               t.evaluation.actions[0].name == "transfer_to_human_agents" and t.evaluation.actions[0].compare_args == []
               and t.evaluation.communicate_info in (["pin"], ["puk"], ["2025-01-31"]) for t in traps)
    # Every task also asks for the policy's first look-ups (the customer, then the line), and for the account
    # reads before an account fix (usage before a top-up, bills before a payment request): no blind fixer is paid;
    # and, but for traps, for the gold world itself (DB): a write nobody asked for fails it.
    for t in train_tasks:
        facts, spec = t.user_scenario.facts, t.evaluation
        assert spec.reward_basis[:3] == (["ENV_ASSERTION", "ACTION", "COMMUNICATE"] if facts["trap"] else
                                         ["DB", "ENV_ASSERTION", "ACTION"])
        reads = [(a.name, a.arguments) for a in spec.actions if a.name != "transfer_to_human_agents"]
        assert reads[:2] == [("get_customer_by_phone", {"phone_number": facts["phone_number"]}),
                             ("get_details_by_id", {"id": facts["line_id"]})]
        faults = facts["faults"]
        assert ("get_data_usage" in {n for n, _ in reads}) == ("usage:exceeded" in faults)
        assert ("get_bills_for_customer" in {n for n, _ in reads}) == ("suspension:overdue" in faults)
    assert {t.user_scenario.facts["persona"] for t in train_tasks} == {"confident", "everyday", "novice", "hurried"}
    assert {t.user_scenario.persona.disclosure for t in train_tasks} == {"minimal", "normal", "forthcoming"}
    for t in train_tasks:
        first = t.initial_actions[0]
        facts = t.user_scenario.facts
        assert (first.name, first.requestor) == ("set_user_info", "setup")
        assert first.arguments == {"name": facts["name"], "phone_number": facts["phone_number"]}
        assert facts["phone_number"] in t.user_scenario.known_info and facts["line_id"].startswith("L")
        assert {a.requestor for a in t.gold_actions} == {"assistant", "user"}
    # Both sides fix things: the agent's account fixes and the user's phone fixes.
    names = collections.Counter(a.name for t in train_tasks for a in t.gold_actions)
    assert all(names[n] for n in ("enable_roaming", "refuel_data", "send_payment_request", "resume_line",
                                  "make_payment", "toggle_airplane_mode", "reseat_sim_card", "reset_apn_settings",
                                  "reboot_device", "grant_app_permission", "toggle_roaming", "disconnect_vpn",
                                  "toggle_wifi_calling", "set_network_mode_preference", "toggle_data_saver_mode"))


def test_every_refuel_stays_within_the_policys_cap(train_tasks, test_tasks):
    """The policy allows at most 2 GB of top-ups per line in a cycle, earlier ones included: a task whose fix needs
    more would pay the agent that breaks the policy and fail the one that keeps it."""
    refuels = [t for t in train_tasks + test_tasks if "usage" in t.user_scenario.facts["faults"]]
    assert len(refuels) > 100
    for task in refuels:
        asked = [a.arguments["gb_amount"] for a in task.gold_actions if a.name == "refuel_data"]
        assert len(asked) == 1 and asked[0] in (0.5, 1.0, 1.5, 2.0), (task.id, asked)
        if not task.user_scenario.facts["trap"]:  # a trap is judged on the hand-off, not on the refuel
            total = [a.arguments["expected_amount"] for a in task.evaluation.env_assertions
                     if a.name == "assert_data_refueling_amount"]
            assert len(total) == 1 and total[0] <= 2.0 + 1e-9, (task.id, total)


def test_a_sample_of_train_tasks_verifies(telecom, train_tasks):
    assert all(verify_task(telecom, t) for t in train_tasks[::25])


def test_generation_is_deterministic_and_difficulty_sets_the_faults(telecom):
    a = generated_tasks(telecom, "dev", count=15)
    b = generated_tasks(telecom, "dev", count=15)
    assert [t.model_dump_json() for t in a] == [t.model_dump_json() for t in b]
    other = generated_tasks(telecom, "dev", count=15, seed=1)
    assert [t.model_dump_json() for t in a] != [t.model_dump_json() for t in other]
    for level in (1, 2, 3):
        tasks = generated_tasks(telecom, "test", count=12, difficulty=level, verify=False)
        assert all(t.difficulty == level and len(t.user_scenario.facts["faults"].split("|")) == level for t in tasks)
    with pytest.raises(ValueError):
        generated_tasks(telecom, "test", count=1, difficulty=4)


def test_oracle_with_scenario_user_scores_one_and_doing_nothing_zero_on_every_test_task(test_tasks):
    env = MuaEnv("telecom", world="generated", split="test", user="scenario")
    assert "get_data_usage" in env.core._policy and "<main_policy>" not in env.core._policy  # our own policy
    assert env.core.tasks("test") is test_tasks
    failures = []
    for task in test_tasks:
        reward, info = play(env, task, OracleAgent(task))
        if reward != 1.0:
            failures.append((task.id, task.description, info.get("termination_reason"),
                             info.get("reward_info", {}).get("env_assertions_failed")))
    rate = 1 - len(failures) / len(test_tasks)
    print(f"\nScenarioUser + oracle success rate on {len(test_tasks)} generated test tasks: {rate:.1%}")
    assert not failures, failures[:5]
    for task in test_tasks:
        reward, info = idle(env, task)
        assert reward == 0.0, task.id


def test_a_trap_is_solved_by_transferring_and_not_by_fixing(telecom, train_tasks):
    from mua_gym.messages import AssistantMessage, ToolCall, ToolMessage
    from mua_gym.env.episode import prepare_task
    from mua_gym.env.reward import evaluate

    task = next(t for t in train_tasks if t.user_scenario.facts["trap"] == "suspension")
    prepared = prepare_task(telecom, task)
    world = telecom.world_from_image(prepared.image, "generated")
    world.reset(prepared.start, prepared.start_memory)
    cid, lid = task.user_scenario.facts["customer_id"], task.user_scenario.facts["line_id"]
    lookups = [ToolCall.make(f"l{i}", a.name, a.arguments) for i, a in enumerate(task.evaluation.actions[1:])]
    handoff = ToolCall.make("t", "transfer_to_human_agents", {"summary": "help"})

    def ran(calls: list) -> list:  # the calls, each answered by a result that is no error
        return [AssistantMessage(tool_calls=calls)] + [ToolMessage(tool_call_id=c.id, content="{}") for c in calls]

    why = [AssistantMessage(content=f"Your contract ended on {task.evaluation.communicate_info[0]}, so I must "
                                    "transfer you.")]
    transfer = ran(lookups + [handoff]) + why
    assert evaluate(telecom, task, world, ran(lookups[:1] + [handoff]) + why).reward == 0.0  # the line: not looked up
    refused = [transfer[0]] + [m.model_copy(update={"error": True}) for m in transfer[1:-1]] + why
    assert evaluate(telecom, task, world, refused).reward == 0.0  # calls the tools refused are no look-ups
    assert evaluate(telecom, task, world, ran(lookups + [handoff])).reward == 0.0  # the reason never told
    assert evaluate(telecom, task, world, transfer).reward == 1.0
    # Fixing what can be fixed, then lifting the suspension of a line whose contract has ended (against the
    # policy) brings the service back, and fails the task even with a transfer.
    for action in task.gold_actions[:-1]:
        assert not world.call_tool(action.name, action.arguments, action.requestor).error
    assert evaluate(telecom, task, world, transfer).reward == 1.0
    assert not world.call_tool("resume_line", {"customer_id": cid, "line_id": lid}).error
    assert not world.call_tool("reboot_device", {}, "user").error
    assert evaluate(telecom, task, world, transfer).reward == 0.0
    world.close()


def test_a_world_too_small_to_hold_a_bill_still_builds():
    """With few customers some seeds draw no bills at all; an empty table must insert nothing (SQLAlchemy makes
    one row of defaults of an empty list, which the NOT NULL columns refuse)."""
    bills = []
    for seed in range(50):
        con = _db(WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=seed, size=0.02)))
        bills.append(con.execute("SELECT COUNT(*) FROM bills").fetchone()[0])
    assert 0 in bills and max(bills) > 0
