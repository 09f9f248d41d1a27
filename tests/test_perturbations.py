"""Domain randomisation: each perturbation does what it says, is drawn from the episode's seed bit for bit, keeps
the world and the reward true, and leaves every task solvable by the fair agent that retries."""

import json

import numpy as np
import pytest

import mua_gym
from mua_gym.eval.agents import FairAgent, make_agent
from mua_gym.env.episode import prepare_task
from mua_gym.perturbations import (
    FAULTS, EpisodeFacts, OffScriptPersona, Paraphrase, ResultFields, ToolFaults, Typos, check_perturb_specs,
    make_perturbations, perturbation_names,
)
from mua_gym.perturbations.observations import protected_words

ALL = "observation+action+transition+user"


def play(env, agent_spec="fair-retry", seed=0, **reset):
    """One episode of ``agent_spec`` on ``env`` (a MuaEnv): (reward, last info, trajectory)."""
    core = env.unwrapped.core
    obs, info = env.reset(seed=seed, **reset)
    agent = make_agent(agent_spec, core.task)
    agent.reset(info)
    while True:
        obs, reward, terminated, truncated, step_info = env.step(agent.act(obs))
        if terminated or truncated:
            return reward, step_info, core.trajectory()


def test_off_by_default_nothing_is_recorded():
    env = mua_gym.make("mua/Retail-v0", user="scenario")
    _, info = env.reset(seed=1)
    assert "perturbations" not in info
    reward, step_info, trajectory = play(env, seed=1)
    assert reward == 1.0 and trajectory.perturbations is None and "perturbation_events" not in step_info


def test_same_seed_same_perturbed_episode_bit_for_bit_and_another_seed_differs():
    lines = []
    for _ in range(2):
        env = mua_gym.make("mua/Retail-v0", user="scenario", perturb=ALL)
        lines.append([play(env, seed=seed)[2].to_json_line() for seed in (3, 4)])
    assert lines[0] == lines[1]
    drawn = [json.loads(line)["perturbations"]["drawn"] for line in lines[0]]
    assert drawn[0] != drawn[1]


def test_a_perturbation_added_to_a_stack_leaves_the_others_draws_alone():
    one = mua_gym.make("mua/Airline-v0", user="scenario", perturb="typos+tool_faults:rate=0.5")
    two = mua_gym.make("mua/Airline-v0", user="scenario", perturb="typos+tool_faults:rate=0.5+cost_notes")
    _, info_one = one.reset(seed=9)
    _, info_two = two.reset(seed=9)
    assert info_two["perturbations"][:2] == info_one["perturbations"]


def test_a_static_perturbation_draws_the_same_every_episode_and_its_spec_round_trips():
    env = mua_gym.make("mua/Retail-v0", user="scenario", perturb="action:static=5+tool_faults:rate=0.3")
    infos = [env.reset(seed=seed)[1] for seed in (0, 1, 2)]
    tools = [json.dumps(info["tools"]) for info in infos]
    assert tools[0] == tools[1] == tools[2]  # the action family: one variant for every episode
    assert {d["static"] for info in infos for d in info["perturbations"][:3]} == {5}
    faults = [info["perturbations"][3] for info in infos]
    assert "static" not in faults[0]
    again = mua_gym.make("mua/Retail-v0", user="scenario", perturb="action:static=5")
    assert json.dumps(again.reset(seed=9)[1]["tools"]) == tools[0]  # the seed, not the episode, decides
    other = mua_gym.make("mua/Retail-v0", user="scenario", perturb="action:static=6")
    assert json.dumps(other.reset(seed=0)[1]["tools"]) != tools[0]
    assert json.dumps(env.unwrapped.core.static_tools()) == tools[0]  # drawn without an episode
    with pytest.raises(ValueError, match="draw per episode"):
        mua_gym.make("mua/Retail-v0", perturb="action").unwrapped.core.static_tools()
    stack = make_perturbations("action:static=5+tool_faults:rate=0.3:kinds=timeout|+persona")
    assert repr(make_perturbations(repr(stack))) == repr(stack)
    assert [item.static for item in stack.items] == [5, 5, 5, None, None]


def test_the_envs_own_task_stream_is_the_same_with_and_without_perturbations():
    clean = mua_gym.make("mua/Retail-v0", user="scenario")
    perturbed = mua_gym.make("mua/Retail-v0", user="scenario", perturb=ALL)
    assert [clean.reset(seed=s)[1]["task_id"] for s in range(5)] == \
        [perturbed.reset(seed=s)[1]["task_id"] for s in range(5)]


@pytest.mark.parametrize("domain", ["Retail", "Airline", "Telecom"])
def test_the_fair_agent_with_retries_still_scores_one_under_every_family(domain):
    env = mua_gym.make(f"mua/{domain}-v0", user="scenario", perturb=ALL + "+tool_faults:rate=0.3")
    faults = 0
    for seed in range(12):
        reward, info, trajectory = play(env, seed=seed)
        assert reward == 1.0, (seed, info["termination_reason"], trajectory.perturbations)
        faults += sum("fault" in e for e in trajectory.perturbations["events"])
    assert faults >= 5  # the faults did happen


def test_the_fair_agent_without_retries_is_hurt_by_faults():
    env = mua_gym.make("mua/Retail-v0", user="scenario", perturb="tool_faults:rate=0.5")
    rewards = [play(env, "fair", seed=seed)[0] for seed in range(12)]
    assert min(rewards) == 0.0


def test_a_faulted_write_never_reaches_the_world_and_is_not_the_agents_error():
    env = mua_gym.make("mua/Retail-v0", user="scenario", perturb="tool_faults:rate=0.99:kinds=server_error")
    core = env.unwrapped.core
    task = next(t for t in core.tasks() if any(core.domain.tools[a.name].kind == "write" for a in t.gold_actions))
    env.reset(seed=2, options={"task_id": task.id})
    write = next(a for a in task.gold_actions if core.domain.tools[a.name].kind == "write")
    before = core.world.state_hash()
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": write.name, "arguments": json.dumps(write.arguments)}}]}
    obs, _, _, _, info = env.step(call)
    assert obs[0]["content"].startswith("Error: 503 Service Unavailable")
    assert core.world.state_hash() == before
    assert info["tool_errors"] == 0 and info["perturbation_events"][0]["fault"] == "server_error"
    assert info["perturbation_events"][0]["tool"] == write.name


def test_faults_answer_only_known_tools_and_rate_zero_never_faults():
    faults = ToolFaults(rate=0.9)
    faults.begin(np.random.default_rng(0), None)
    from mua_gym.perturbations import Call

    assert faults.intercept(Call("no_such_tool", {}, None, 1)) is None
    answers = [faults.intercept(Call("get_order_details", {}, "read", 1)) for _ in range(200)]
    assert 150 < sum(a is not None for a in answers) < 200
    kinds = {e["fault"] for e in faults.take_events()}
    assert kinds == set(FAULTS)
    never = ToolFaults(rate=0.0)
    never.begin(np.random.default_rng(0), None)
    assert all(never.intercept(Call("get_order_details", {}, "read", 1)) is None for _ in range(100))


def test_a_distractor_call_is_refused_counts_as_the_agents_error_and_changes_nothing():
    env = mua_gym.make("mua/Retail-v0", user="scenario", perturb="distractor_tools:count=3")
    core = env.unwrapped.core
    _, info = env.reset(seed=5)
    real = {t["function"]["name"] for t in core.tool_schemas}
    offered = [t["function"]["name"] for t in info["tools"]]
    added = info["perturbations"][0]["added"]
    assert len(added) == 3 and set(added).isdisjoint(real) and set(offered) == real | set(added)
    before = core.world.state_hash()
    obs, _, _, _, step_info = env.step({"role": "assistant", "content": None, "tool_calls": [
        {"id": "d", "type": "function", "function": {"name": added[0], "arguments": "{}"}}]})
    assert obs[0]["content"].startswith("Error: tool ") and core.world.state_hash() == before
    assert step_info["tool_errors"] == 1 and step_info["perturbation_events"][0]["did"] == "refused_distractor"
    assert core.trajectory().tools == info["tools"]


def test_description_perturbations_keep_names_and_parameters_and_never_touch_the_shared_schemas():
    domain = mua_gym.get_domain("retail")
    shared = json.dumps(domain.tool_schemas("generated"))
    env = mua_gym.make("mua/Retail-v0", user="scenario", perturb="tool_descriptions:misleading=0.5+cost_notes")
    _, info = env.reset(seed=0)
    clean = domain.tool_schemas("generated")
    assert json.dumps(clean) == shared
    assert [t["function"]["name"] for t in info["tools"]] == [t["function"]["name"] for t in clean]
    for perturbed, original in zip(info["tools"], clean):
        assert perturbed["function"]["parameters"]["properties"].keys() == \
            original["function"]["parameters"]["properties"].keys()
        assert "credits per call" in perturbed["function"]["description"]
    drawn = info["perturbations"][0]
    assert drawn["swapped"]
    swapped = next(t for t in info["tools"] if t["function"]["name"] == drawn["swapped"][0])
    original = next(t for t in clean if t["function"]["name"] == drawn["swapped"][0])
    assert swapped["function"]["description"][:30] != original["function"]["description"][:30]


def _facts(task):
    return EpisodeFacts(task, len(task.gold_actions), [])


def test_typos_change_ordinary_words_only_and_never_a_fact_or_a_stop_token():
    task = mua_gym.get_domain("retail").tasks("train")[0]
    typos = make_perturbations("typos:rate=1:casing=0.5")
    typos.begin(0, _facts(task))
    protected = protected_words(_facts(task))
    facts = task.user_scenario.facts
    text = (f"Hello there, my email is {facts.get('email', 'x@y.com')} and my order number is #W1234567 please "
            "check everything carefully ###STOP###")
    changed = typos.user_text(text)
    assert changed.endswith("###STOP###") and "#W1234567" in changed
    assert facts.get("email", "x@y.com") in changed
    assert changed != text
    words, out = text.split(), changed.split()
    assert len(words) == len(out)
    for before, after in zip(words, out):
        if not before.isalpha() or not before.islower() or before.lower() in protected or len(before) < 3:
            assert before == after


def test_protected_words_are_the_scenarios_values_not_its_request_wording():
    task = next(t for t in mua_gym.get_domain("retail").tasks("train") if t.user_scenario.facts.get("first_name"))
    protected = protected_words(_facts(task))
    assert task.user_scenario.facts["first_name"].lower() in protected
    says = task.user_scenario.intents[0]["says"].lower()
    assert any(w not in protected for w in says.split() if w.isalpha())


def test_paraphrase_swaps_known_phrases_and_keeps_a_refusal_a_refusal():
    paraphrase = Paraphrase(rate=1.0, fillers=0.0)
    paraphrase.begin(np.random.default_rng(1), None)
    assert paraphrase.user_text("Yes, please go ahead.") != "Yes, please go ahead."
    for _ in range(20):
        assert paraphrase.user_text("No, please don't do that.").startswith("No")
    assert paraphrase.user_text("Nothing here to swap") == "Nothing here to swap"


def test_result_fields_keep_every_value_and_every_key_that_is_an_id():
    fields = ResultFields(reorder=1.0, rename=1.0)
    fields.begin(np.random.default_rng(0), _facts(mua_gym.get_domain("retail").tasks("train")[0]))
    result = {"user_id": "ruby_phillips_8163", "payment_methods": {"credit_card_8690115": {"card_last_four": "1234"}},
              "orders": ["#W1", "#W2"], "total_amount": 12.5}
    text = fields.tool_result(None, json.dumps(result))
    changed = json.loads(text)
    assert "credit_card_8690115" in json.dumps(changed)
    assert "user_id" not in changed and len(changed) == 4

    def leaves(value):
        if isinstance(value, dict):
            return sorted(x for v in value.values() for x in leaves(v))
        if isinstance(value, list):
            return [x for v in value for x in leaves(v)]
        return [json.dumps(value)]
    assert leaves(changed) == leaves(result)
    assert ["#W1", "#W2"] in changed.values()
    assert fields.tool_result(None, "Transfer successful") == "Transfer successful"


def test_personas_stay_within_the_task_and_never_change_its_gold_world():
    domain = mua_gym.get_domain("retail")
    task = next(t for t in domain.tasks("train") if t.user_scenario.persona is None)  # (one request: no persona)
    gold = prepare_task(domain, task).gold_hash
    for kind in ("impatient", "vague", "changes_mind"):
        persona = OffScriptPersona(kinds=kind, rate=1.0)
        drawn = persona.begin(np.random.default_rng(0), _facts(task))
        played = persona.user_task(task)
        assert played.user_scenario.persona is not None and task.user_scenario.persona is None
        assert played.evaluation == task.evaluation and played.gold_actions == task.gold_actions
        assert drawn["patience"] >= 2 * len(task.gold_actions) + 8
        opening = persona.user_text("Hi! I need help.")
        if kind == "changes_mind":
            assert opening.endswith("Hi! I need help.") and len(opening) > len("Hi! I need help.") + 20
            assert persona.user_text("Yes.") == "Yes."
    assert prepare_task(domain, task).gold_hash == gold


def test_the_eval_engine_and_make_take_perturb():
    from mua_gym.eval.evaluate import EvalConfig, evaluate

    summary = evaluate(EvalConfig(env_ids=["mua/Telecom-v0"], agent="fair-retry", user="scenario", split="dev",
                                  num_tasks=4, perturb="tool_faults:rate=0.3+persona"))
    assert summary.pass_hat_k[1] == 1.0


def test_the_gap_table_reports_a_drop_per_spec(tmp_path, capsys):
    from mua_gym.cli import main

    out = tmp_path / "gap"
    code = main(["eval", "--env", "mua/Retail-v0", "--agent", "fair", "--user", "scenario", "--split", "dev",
                 "--num-tasks", "8", "--quiet", "--out", str(out), "--perturb", "tool_faults:rate=0.6",
                 "--perturb", "observation"])
    assert code == 0
    rows = {r["perturb"]: r for r in json.loads((out / "gap.json").read_text())}
    assert rows["observation"]["drop"] == 0.0 and rows["observation"]["clean"] == 1.0
    assert rows["tool_faults:rate=0.6"]["drop"] > 0 and rows["tool_faults:rate=0.6"]["families"] == ["transition"]
    assert (out / "clean" / "episodes.jsonl").exists() and "| tool_faults:rate=0.6 | transition |" in \
        capsys.readouterr().out


@pytest.mark.parametrize("spec, message", [
    ("nonsense", "unknown perturbation 'nonsense'"), ("typos:rate", "not key=value"),
    ("typos:speed=3", "unexpected keyword"), ("tool_faults:rate=1", "below 1"),
    ("tool_faults:kinds=meteor", "unknown: .'meteor'"), ("persona:kinds=grumpy", "unknown: .'grumpy'"),
    ("persona:kinds=|", "unknown: .none named."), ("distractor_tools:count=inf", "distractor_tools"),
    ("action:static=-1", "static is a seed"), ("typos:static=x", "static is a seed"),
    ("transition:rate=0.5", "a family takes no options.*tool_faults"), ("distractor_tools:count=abc", "whole number"),
    ("distractor_tools:count=1.5", "whole number"), ("typos:rate=abc", "rate is a chance"),
    ("tool_faults:rate=x", "rate is a chance"), ("tool_faults:tools=", "names the tools"),
    ("tool_faults:tools=get_order_detials", r"not offered to the agent.*get_order_details"),
])
def test_bad_specs_fail_at_make_with_a_clear_message(spec, message):
    with pytest.raises(ValueError, match=message):
        mua_gym.make("mua/Retail-v0", perturb=spec)


def test_every_family_has_a_perturbation_and_family_names_expand():
    names = perturbation_names()
    assert set(names.values()) == {"observation", "action", "transition", "user"}
    stack = make_perturbations("action")
    assert {p.name for p in stack.items} == {n for n, f in names.items() if f == "action"}
    assert make_perturbations(None) is None and make_perturbations([]) is None
    typos = Typos()
    stack = make_perturbations([typos, typos])
    assert stack.items[0] is not typos and stack.items[0] is not stack.items[1]  # each env its own copy


def test_text_perturbations_take_linear_time_on_hostile_text():
    import time

    stack = make_perturbations("typos:rate=1+paraphrase:rate=1+persona:kinds=vague:rate=1")
    task = mua_gym.get_domain("retail").tasks("train")[0]
    stack.begin(0, _facts(task))
    sizes, spent = (50_000, 400_000), []
    for n in sizes:
        hostile = ("a" * n + "@") + " " + "(((" * (n // 10) + " " + "Yes, please go ahead." * (n // 100)
        started = time.perf_counter()
        stack.user_text(hostile)
        spent.append(time.perf_counter() - started)
    assert spent[1] < 20 * spent[0] + 0.05  # 8x the text: well under the 64x a quadratic pass would take


def test_an_env_made_from_a_stack_gets_its_own_copy():
    stack = make_perturbations("distractor_tools")
    one = mua_gym.make("mua/Retail-v0", user="scenario", perturb=stack)
    two = mua_gym.make("mua/Retail-v0", user="scenario", perturb=stack)
    assert one.unwrapped.core.perturbations is not two.unwrapped.core.perturbations
    _, info = one.reset(seed=1)
    two.reset(seed=2)
    added = info["perturbations"][0]["added"][0]
    obs, *_, step_info = one.step({"role": "assistant", "content": None, "tool_calls": [
        {"id": "d", "type": "function", "function": {"name": added, "arguments": "{}"}}]})
    assert step_info["perturbation_events"][0]["did"] == "refused_distractor"


def test_service_faults_are_not_the_agents_calls_in_the_efficiency_term():
    clean = mua_gym.make("mua/Retail-v0", user="scenario", reward="task+efficiency")
    faulty = mua_gym.make("mua/Retail-v0", user="scenario", reward="task+efficiency", perturb="tool_faults:rate=0.5")
    for seed in range(8):
        reward, info, trajectory = play(faulty, seed=seed)
        assert reward == play(clean, seed=seed)[0] == 1.0
        assert trajectory.tool_calls > info["reward_info"]["efficiency"]["calls"] or not \
            trajectory.perturbations["events"]


def test_fair_retry_retries_a_service_fault_but_not_a_domains_refusal():
    env = mua_gym.make("mua/Retail-v0", user="scenario")
    core = env.unwrapped.core
    _, info = env.reset(seed=0)
    agent = FairAgent(core.task, retries=3)
    agent.reset(info)
    agent._last_call = {"function": {"name": "get_order_details", "arguments": '{"order_id": "#W0"}'}}
    retried = agent.act([{"role": "tool", "content": "Error: 503 Service Unavailable: the server could not handle "
                                                     "the request (trace 00ff)"}])
    assert retried["tool_calls"][0]["function"]["name"] == "get_order_details"
    agent._last_call = {"function": {"name": "get_order_details", "arguments": '{"order_id": "#W0"}'}}
    moved_on = agent.act([{"role": "tool", "content": "Error: order not found"}])
    assert agent._retried == 0 and moved_on != retried


def test_result_fields_leave_keys_the_agent_sends_back_and_keep_the_tools_format():
    fields = ResultFields(reorder=0.0, rename=1.0)
    schemas = [{"type": "function", "function": {"name": "search", "parameters": {"properties": {
        "cabin": {"type": "string", "enum": ["basic_economy", "economy"]}}}}}]
    task = mua_gym.get_domain("retail").tasks("train")[0]
    fields.begin(np.random.default_rng(0), EpisodeFacts(task, 1, schemas, "Use the flight_number the user gives."))
    result = {"available_seats": {"basic_economy": 3, "economy": 5}, "flight_number": "HAT001", "total_price": 5}
    assert fields._style is not None
    changed = json.loads(fields.tool_result(None, json.dumps(result)))
    assert "basic_economy" in json.dumps(changed) and "flight_number" in changed
    assert "total_price" not in changed and "available_seats" not in changed
    compact = '{"name":"José","unit_price":1}'
    assert fields.tool_result(None, compact).startswith('{"name":"José",')
    deep = "[" * 5000 + "]" * 5000
    assert fields.tool_result(None, deep) == deep


def test_a_spec_name_may_carry_spaces_and_the_gap_refuses_empty_or_repeated_specs(capsys):
    assert repr(make_perturbations(" typos :rate=0.1")) == "typos:rate=0.1:casing=0.3"
    for specs in ([""], ["+"], ["typos", "typos"]):
        with pytest.raises(ValueError, match="names no perturbation|more than once"):
            check_perturb_specs(specs)
    from mua_gym.cli import main

    code = main(["eval", "--env", "mua/Retail-v0", "--agent", "fair", "--user", "scenario", "--num-tasks", "1",
                 "--quiet", "--perturb", ""])
    assert code == 2 and "perturbation spec '' names no perturbation" in capsys.readouterr().err


def test_descriptions_keep_what_a_perturbation_before_them_added_and_their_record_keeps_its_options():
    env = mua_gym.make("mua/Retail-v0", user="scenario", perturb="cost_notes+tool_descriptions:misleading=0.5")
    _, info = env.reset(seed=3)
    assert all("credits per call" in t["function"]["description"] for t in info["tools"])
    drawn = info["perturbations"][1]
    assert drawn["misleading"] == 0.5 and drawn["swapped"] and drawn["reworded"]


def test_rewording_leaves_first_name_and_explicit_alone():
    env = mua_gym.make("mua/Airline-v0", user="scenario", perturb="tool_descriptions:paraphrase=1:misleading=0")
    _, info = env.reset(seed=0)
    text = json.dumps(info["tools"])
    assert "first name" in text and "beforehand" not in text


def test_rewording_at_once_equals_rewording_one_pattern_after_another():
    from mua_gym.perturbations import actions

    # Rewording every match in one pass is only the same as applying the rewordings in turn if no
    # replacement is itself something a rewording matches.
    for _, ways in actions._REWORDINGS:
        for word in ways:
            assert not any(pattern.search(word) for pattern, _ in actions._COMPILED), word
    texts = ["Get the customer. Returns the order, e.g. its id. Find the customer first; Get again.",
             "Nothing to reword here.", "Getter of customers (Find-ish), e.g.: Returns"]
    for text in texts:
        for seed in range(20):
            one_after_another = text
            rng = np.random.default_rng(seed)
            for pattern, ways in actions._COMPILED:
                one_after_another = pattern.sub(lambda _, w=ways: w[int(rng.integers(len(w)))], one_after_another)
            at_once_rng = np.random.default_rng(seed)
            assert actions._reword(text, at_once_rng) == one_after_another
            assert at_once_rng.bit_generator.state == rng.bit_generator.state  # the same draws, no more


def test_renamed_results_keep_every_name_a_tool_schema_takes():
    env = mua_gym.make("mua/Airline-v0", user="scenario", perturb="result_fields:rename=1:reorder=0")
    facts = None
    for seed in range(6):
        _, info = env.reset(seed=seed)
        if info["perturbations"][0]["style"] is not None:
            facts = env.unwrapped.core.task.user_scenario.facts
            break
    assert facts is not None
    user_id = facts["user_id"]
    step = env.step(json.dumps({"name": "get_user_details", "arguments": {"user_id": user_id}}))
    shown = json.loads(step[0][-1]["content"])
    passengers = shown.get("saved_passengers") or next(v for k, v in shown.items() if "passengers" in k.lower())
    assert passengers and {"first_name", "last_name", "dob"} <= set(passengers[0])
    assert "user_id" in shown and "saved_passengers" not in shown  # a parameter's name stays; a result's own goes


def test_the_persona_speaks_before_observation_noise_so_a_vague_yes_stays_a_yes():
    stack = make_perturbations("paraphrase:rate=1:fillers=1+persona:kinds=vague:rate=1")
    task = mua_gym.get_domain("retail").tasks("train")[0]
    hedges = ("Hmm. ", "Let me think. ", "Well... ", "Not sure, but ")
    for seed in range(40):
        stack.begin(seed, _facts(task))
        stack.user_text("Hi! I'd like to return an item.")  # the opening
        said = stack.user_text("Yes, please go ahead.")
        assert not said.startswith(hedges), said


def test_a_user_with_a_fixed_persona_is_refused_with_a_user_perturbation():
    from mua_gym.task import Persona

    with pytest.raises(ValueError, match="fixed persona"):
        mua_gym.make("mua/Retail-v0", user="scenario", user_kwargs={"persona": Persona(patience=5)},
                     perturb="persona")
    mua_gym.make("mua/Retail-v0", user="scenario", user_kwargs={"persona": Persona(patience=5)}, perturb="typos")
