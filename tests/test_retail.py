"""Retail on our own worlds: the generator, the task generator, the tools' rules, the env end to end."""

import collections
import hashlib
import json

import pytest
from episodes import idle, play
from mua_gym.domains.retail.generate import build_generated
from mua_gym.domains.retail.schema import Base
from mua_gym.domains.retail.taskgen import generated_tasks

import mua_gym
from mua_gym import MuaEnv
from mua_gym.eval.agents import OracleAgent
from mua_gym.world.image import WorldImage

# Pinned: the default generated world of seed 0, its content hash and the sha256 of its SQLite image
# (they change only with a deliberate change of the generator or schema; update them with it).
PINNED_DEFAULT_HASH = "bcf0d68be389d6ce083b6378b091e85b"
PINNED_IMAGE_SHA256 = "79299e473e10d84d"


@pytest.fixture(scope="module")
def retail():
    return mua_gym.get_domain("retail")


@pytest.fixture(scope="module")
def test_tasks(retail):
    return retail.tasks("test")


def test_generated_world_is_bit_identical_per_seed(retail):
    a = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=3, size="tiny"))
    b = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=3, size="tiny"))
    c = WorldImage.build(Base.metadata, lambda c: build_generated(c, seed=4, size="tiny"))
    assert a.data == b.data and a.hash == b.hash
    assert a.hash != c.hash


def test_default_world_scale_and_pinned_hash(retail):
    world = retail.new_world()
    count = lambda t: world.raw.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # noqa: E731
    assert 45 <= count("products") <= 55 and 500 <= count("variants") <= 700
    assert count("users") == 500 and count("orders") == 1000
    statuses = dict(world.raw.execute("SELECT status, COUNT(*) FROM orders GROUP BY status").fetchall())
    assert set(statuses) == {"pending", "processed", "delivered", "cancelled"}
    assert f"{world.image.hash:032x}" == PINNED_DEFAULT_HASH
    assert hashlib.sha256(world.image.data).hexdigest()[:16] == PINNED_IMAGE_SHA256


def test_sizes(retail):
    tiny = retail.new_world(size="tiny")
    assert tiny.raw.execute("SELECT COUNT(*) FROM orders").fetchone()[0] < 100
    with pytest.raises(ValueError):
        retail.new_world(size="enormous")


def test_task_counts_splits_and_categories(retail, test_tasks):
    train = retail.tasks("train")
    assert len(train) >= 2000 and len(test_tasks) >= 200
    users = {s: {t.user_scenario.facts["user_id"] for t in ts}
             for s, ts in (("train", train), ("dev", retail.tasks("dev")), ("test", test_tasks))}
    assert not users["train"] & users["test"] and not users["train"] & users["dev"] and not users["dev"] & users["test"]
    categories = collections.Counter(t.category for t in train)
    assert set(categories) == {"cancel", "modify_items", "modify_address", "modify_payment", "user_address",
                               "return", "exchange", "information", "refusal", "multi", "refund_total",
                               "price_difference", "claim_status", "transfer"}
    assert len({t.id for t in train}) == len(train)
    auth = collections.Counter(t.gold_actions[0].name for t in train)
    assert auth["find_user_id_by_email"] > 0 and auth["find_user_id_by_name_zip"] > 0


def test_task_generation_is_deterministic_and_sized_on_demand(retail):
    a = generated_tasks(retail, "dev", count=30, seed=0)
    b = generated_tasks(retail, "dev", count=30, seed=0)
    assert [t.model_dump_json() for t in a] == [t.model_dump_json() for t in b]
    assert len(generated_tasks(retail, "test", count=7)) == 7
    hard = generated_tasks(retail, "test", count=10, difficulty=3)
    assert all(t.category == "multi" and len(t.user_scenario.intents) == 3 for t in hard)
    assert all(t.user_scenario.intents[-1]["category"] in ("refusal", "claim_status", "transfer") for t in hard)
    long = generated_tasks(retail, "test", count=5, difficulty=4)
    assert all(4 <= len(t.user_scenario.intents) <= 6 for t in long)


def test_oracle_scores_one_and_doing_nothing_zero_on_every_test_task(test_tasks):
    env = MuaEnv("retail", split="test")
    for task in test_tasks:
        reward, info = play(env, task, OracleAgent(task))
        assert reward == 1.0, (task.id, info)
        reward, info = idle(env, task)
        assert reward == 0.0, task.id


def test_refusal_tasks_punish_the_forbidden_write(retail, test_tasks):
    task = next(t for t in test_tasks if t.category == "refusal")
    facts = task.user_scenario.intents[0]
    env = MuaEnv("retail", split="test")
    env.reset(options={"task": task})
    for call in task.gold_actions:
        env.step({"name": call.name, "arguments": call.arguments})
    oid = facts["order_id"]
    if facts["forbidden"] == "cancel":  # the tool itself refuses: nothing changes
        cancel = {"order_id": oid, "reason": "no longer needed"}
        obs, *_ = env.step({"name": "cancel_pending_order", "arguments": cancel})
        assert obs[0]["content"] == "Error: Non-pending order cannot be cancelled"
    while True:
        *_, reward, terminated, truncated, info = env.step(f"I cannot do that, sorry: it is {facts['status']}.")
        if terminated or truncated:
            break
    assert reward == 1.0  # looked it up, refused with the status that forbids it, changed nothing


def test_tool_rules_on_a_generated_world(retail):
    w = retail.new_world(size="tiny")
    pending = w.raw.execute("SELECT order_id, user_id FROM orders WHERE status = 'pending' LIMIT 1").fetchone()
    delivered = w.raw.execute("SELECT order_id FROM orders WHERE status = 'delivered' LIMIT 1").fetchone()
    assert w.call_tool("get_order_details", {"order_id": "#W0000000"}).content == "Error: Order not found"
    r = w.call_tool("cancel_pending_order", {"order_id": pending[0], "reason": "bored"})
    assert r.content == "Error: Invalid reason"
    r = w.call_tool("cancel_pending_order", {"order_id": delivered[0], "reason": "no longer needed"})
    assert r.content == "Error: Non-pending order cannot be cancelled"
    before = w.state_hash()
    r = w.call_tool("cancel_pending_order", {"order_id": pending[0], "reason": "ordered by mistake"})
    order = json.loads(r.content)
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert [p["transaction_type"] for p in order["payment_history"]] == ["payment", "refund"]
    assert w.state_hash() != before
    assert w.call_tool("calculate", {"expression": "__import__('os')"}).content == \
        "Error: Invalid characters in expression"
    assert w.call_tool("calculate", {"expression": "(10 + 5) / 4"}).content == "3.75"
    types = json.loads(w.call_tool("list_all_product_types", {}).content)
    assert list(types) == sorted(types)


def test_cli_runs_retail_oracle_on_generated_tasks(capsys):
    from mua_gym.cli import main

    assert main(["run", "--env", "mua/Retail-v0", "--split", "test", "--episodes", "3", "--quiet"]) == 0
    assert "3 episodes, mean reward 1.000" in capsys.readouterr().out


def test_cli_runs_retail_oracle_on_tau2_tasks(capsys):
    from mua_gym.domain import tau2
    from mua_gym.cli import main

    try:
        tau2.data_dir("retail")
    except tau2.Tau2NotFound as exc:
        pytest.skip(f"TAU2 is not installed: {exc}")
    assert main(["run", "--env", "mua/Retail-v0", "--world", "tau2", "--split", "test", "--episodes", "3",
                 "--quiet"]) == 0
    assert "3 episodes, mean reward 1.000" in capsys.readouterr().out


def test_tau2_folder_can_be_named_and_missing_data_is_a_clear_error(retail, tmp_path):
    from mua_gym.domain import tau2

    with pytest.raises(tau2.Tau2NotFound, match="no TAU2 data folder"):
        retail.tasks("test", "tau2", path=str(tmp_path / "nowhere"))
    with pytest.raises(tau2.Tau2NotFound, match="missing TAU2 file"):
        retail.tasks("test", "tau2", path=str(tmp_path))
