"""verl 0.9: the ``mua_gym`` agent loop run by verl's own ``AgentLoopWorker`` on the CPU.

What runs is verl's: ``AgentLoopWorker.__init__`` (the generated PPO config, ``HFModelConfig`` loading a
model folder, the agent loop file that names our loop), ``RLHFDataset`` and ``collate_fn`` reading the parquet
file the README's code writes, ``generate_sequences`` (hydra builds the loop per row, ``_agent_loop_postprocess``
pads, ``_postprocess`` stacks the batch and places ``rm_scores``). Only the LLM server is a fake: it returns
scripted token ids, the SmolLM2 tokenizer's encoding of a task's gold actions in Hermes format.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl.experimental.agent_loop.agent_loop")
pytestmark = pytest.mark.slow  # verl, torch and ray import in ~20 s

import pandas as pd  # noqa: E402  (verl's own dependencies)
import torch  # noqa: E402
import transformers  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

import verl  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import mua_gym  # noqa: E402
from integrations.readme import readme_block  # noqa: E402
from mua_gym.eval.agents import OracleAgent  # noqa: E402
from mua_gym.eval.coverage import behaviours  # noqa: E402
from mua_gym.integrations import verl as mua_verl  # noqa: E402
from mua_gym.user_sims import UserReply, UserSimulator, UserSimulatorError  # noqa: E402

END = "<|im_end|>"


def hermes(action: dict[str, Any]) -> str:
    """An OracleAgent action as the text a Hermes/Qwen model writes."""
    if action.get("tool_calls"):
        function = action["tool_calls"][0]["function"]
        return f'<tool_call>\n{{"name": "{function["name"]}", "arguments": {function["arguments"]}}}\n</tool_call>'
    return action["content"]


class ScriptedServer:
    """Stands in for verl's LLM server manager: ``generate`` returns the next scripted text's token ids."""

    def __init__(self, tokenizer: Any, texts: list[str], logprobs: bool = False) -> None:
        self.tokenizer, self.texts, self.logprobs = tokenizer, list(texts), logprobs
        self.calls: list[dict[str, Any]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> TokenOutput:
        text = self.texts[len(self.calls)] if len(self.calls) < len(self.texts) else "Anything else?" + END
        ids = self.tokenizer.encode(text, add_special_tokens=False)[:sampling_params["max_tokens"]]
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids), "ids": ids,
                           "params": dict(sampling_params)})
        log_probs = [-0.5 - i / 1000 for i in range(len(ids))] if self.logprobs else None
        return TokenOutput(token_ids=ids, log_probs=log_probs)


@pytest.fixture(scope="module")
def readme_files(tmp_path_factory) -> Path:
    """The README's verl block, run as written in a fresh folder: the parquet file and the agent loop file."""
    folder = tmp_path_factory.mktemp("verl_readme")
    here = os.getcwd()
    os.chdir(folder)
    try:
        exec(compile(readme_block("Train with verl"), "README.md", "exec"), {})
    finally:
        os.chdir(here)
    return folder


@pytest.fixture(scope="module")
def worker(smollm2_tokenizer, readme_files, tmp_path_factory) -> AgentLoopWorker:
    """verl's AgentLoopWorker built from its generated PPO config, on a model folder holding the tokenizer."""
    model = tmp_path_factory.mktemp("model")
    smollm2_tokenizer.save_pretrained(model)
    transformers.LlamaConfig(vocab_size=len(smollm2_tokenizer), hidden_size=64, intermediate_size=128,
                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                             architectures=["LlamaForCausalLM"]).save_pretrained(model)
    config = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    config.actor_rollout_ref.model.path = str(model)
    config.actor_rollout_ref.rollout.name = "vllm"
    config.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(next(readme_files.glob("*.yaml")))
    config.data.max_prompt_length = 8192
    config.data.max_response_length = 4096
    return AgentLoopWorker(config, ScriptedServer(smollm2_tokenizer, []))


def loop_env_kwargs(loop_file: Path) -> dict[str, Any]:
    """The env keywords the agent loop file gives the loop."""
    return OmegaConf.to_container(OmegaConf.load(loop_file))[0].get("env_kwargs", {})


def task_of(row: dict[str, Any], loop_file: Path) -> mua_gym.Task:
    """The task a row names, from the tasks of the env keywords the agent loop file carries."""
    env = mua_gym.AsyncMuaEnv("retail", **loop_env_kwargs(loop_file))
    return next(t for t in env.tasks("train") if t.id == row["extra_info"]["task_id"])


def gold_texts(task: mua_gym.Task, drop_last_write: bool = False) -> list[str]:
    """The OracleAgent's play in Hermes text, each turn ending with the end-of-turn token."""
    agent = OracleAgent(task)
    # (each further request the user states when asked "anything else?" takes one more turn)
    actions = [agent.act([]) for _ in range(len(task.gold_actions) + 2 + len(task.user_scenario.intents))]
    if drop_last_write:
        tools = mua_gym.get_domain("retail").tools
        writes = [i for i, a in enumerate(actions)
                  if a.get("tool_calls") and tools[a["tool_calls"][0]["function"]["name"]].kind == "write"]
        del actions[writes[-1]]
    return [hermes(a) + END for a in actions]


def batch_of(worker: AgentLoopWorker, readme_files: Path, index: int) -> tuple[DataProto, dict[str, Any]]:
    """One row of the README's parquet file through verl's RLHFDataset and collate_fn, as the trainer does."""
    dataset = RLHFDataset(str(next(readme_files.glob("*.parquet"))), worker.tokenizer, worker.config.data, None)
    row = dataset[index]
    return DataProto.from_single_dict(collate_fn([row])), row


def plain_row(readme_files: Path) -> int:
    """The first row of the README's parquet file whose task writes, hands nothing off and is told straight (the
    oracle's play, written out before the episode, then follows the user's turns)."""
    rows = pd.read_parquet(next(readme_files.glob("*.parquet")))
    loop = next(readme_files.glob("*.yaml"))
    tools = mua_gym.get_domain("retail").tools
    for index in range(len(rows)):
        task = task_of(rows.iloc[index].to_dict(), loop)
        names = {a.name for a in task.gold_actions}
        if any(tools[n].kind == "write" for n in names) and "transfer_to_human_agents" not in names \
                and not behaviours(task):
            return index
    raise AssertionError("no plain task among the README's rows")


def rollout(worker: AgentLoopWorker, readme_files: Path, texts_of: Any, index: int | None = None,
            **server: Any) -> tuple[DataProto, ScriptedServer]:
    batch, row = batch_of(worker, readme_files, plain_row(readme_files) if index is None else index)
    worker.llm_client = ScriptedServer(worker.tokenizer, texts_of(task_of(row, next(readme_files.glob("*.yaml")))),
                                       **server)
    return asyncio.run(worker.generate_sequences(batch)), worker.llm_client


def unpadded(output: DataProto) -> tuple[list[int], list[int]]:
    """(response ids, response mask) of the batch's one sample, without verl's right padding."""
    length = int(output.batch["attention_mask"][0, output.batch["prompts"].shape[1]:].sum())
    return (output.batch["responses"][0, :length].tolist(), output.batch["response_mask"][0, :length].tolist())


def runs_of_ones(ids: list[int], mask: list[int]) -> list[list[int]]:
    runs, current = [], []
    for token, flag in zip(ids, mask):
        if flag:
            current.append(token)
        elif current:
            runs, current = runs + [current], []
    return runs + ([current] if current else [])


def test_readme_rows_name_the_loop_and_the_task(readme_files):
    rows = pd.read_parquet(next(readme_files.glob("*.parquet")))
    assert set(rows["agent_name"]) == {mua_verl.AGENT_NAME}
    assert rows["extra_info"].iloc[0]["env_id"] == "mua/Retail-v0"
    assert rows["extra_info"].iloc[3]["task_id"] == "retail-train-0-00003"
    assert [m["role"] for m in rows["prompt"].iloc[0]] == ["system", "user"]


def test_the_gold_play_scores_one_and_the_mask_covers_exactly_the_generated_tokens(worker, readme_files):
    output, server = rollout(worker, readme_files, gold_texts)
    assert output.batch["rm_scores"].sum().item() == 1.0
    ids, mask = unpadded(output)
    assert output.batch["rm_scores"][0, len(ids) - 1].item() == 1.0  # on the last response token
    assert len(ids) == len(mask) and set(mask) == {0, 1}
    assert runs_of_ones(ids, mask) == [call["ids"] for call in server.calls]
    assert [worker.tokenizer.decode(c["ids"]) for c in server.calls] == server.texts[:len(server.calls)]
    context = worker.tokenizer.decode([t for t, m in zip(ids, mask) if not m])
    assert "<tool_response>" in context and "<|im_start|>user" in context  # tool results and the user's replies
    assert output.non_tensor_batch["mua_reward"][0] == 1.0 and output.non_tensor_batch["mua_cut"][0] == 0.0
    prompt = output.batch["prompts"][0][output.batch["attention_mask"][0, :output.batch["prompts"].shape[1]] == 1]
    for before, after in zip(server.calls, server.calls[1:]):  # ids only grow: each prompt extends the last
        grown = before["prompt_ids"] + before["ids"]
        assert after["prompt_ids"][:len(grown)] == grown
    assert server.calls[0]["prompt_ids"] == prompt.tolist()
    assert len({c["request_id"] for c in server.calls}) == 1  # one sticky session per episode


def test_a_play_missing_its_last_write_scores_zero(worker, readme_files):
    output, server = rollout(worker, readme_files, lambda task: gold_texts(task, drop_last_write=True))
    assert output.batch["rm_scores"].sum().item() == 0.0
    assert output.non_tensor_batch["mua_cut"][0] == 0.0  # it ended normally (the user stopped), and failed
    ids, mask = unpadded(output)
    assert runs_of_ones(ids, mask) == [call["ids"] for call in server.calls]


def test_malformed_model_output_comes_back_as_errors_and_scores_zero(worker, readme_files):
    garbage = ["<tool_call>{not json</tool_call>" + END, "<tool_call>\n{\"name\": \"no_such_tool\", \"arguments\": {}}",
               "", "<tool_call>" * 300 + END, "\x00" + END]
    output, server = rollout(worker, readme_files, lambda task: garbage)
    assert output.batch["rm_scores"].sum().item() == 0.0
    context = worker.tokenizer.decode([t for t, m in zip(*unpadded(output)) if not m])
    assert "Error:" in context


def test_logprobs_are_aligned_with_the_response(worker, readme_files):
    output, server = rollout(worker, readme_files, gold_texts, logprobs=True)
    ids, mask = unpadded(output)
    logprobs = output.batch["rollout_log_probs"][0, :len(ids)].tolist()
    model = [lp for lp, m in zip(logprobs, mask) if m]
    expected = [-0.5 - i / 1000 for call in server.calls for i in range(len(call["ids"]))]
    assert model == pytest.approx(expected) and all(lp == 0.0 for lp, m in zip(logprobs, mask) if not m)


def loop_with_budget(worker: AgentLoopWorker, loop_file: Path, texts: list[str], budget: int
                     ) -> mua_verl.MuaAgentLoop:
    """Our loop built with the arguments the worker passes, ``rollout.response_length`` set to ``budget``."""
    config = copy.deepcopy(worker.config)
    config.actor_rollout_ref.rollout.response_length = budget
    return mua_verl.MuaAgentLoop(
        trainer_config=_wrap(config), server_manager=ScriptedServer(worker.tokenizer, texts),
        tokenizer=worker.tokenizer, processor=None, dataset_cls=RLHFDataset, data_config=_wrap(config.data),
        env_kwargs=loop_env_kwargs(loop_file))


@pytest.mark.parametrize("after_the_last_write", [False, True])
def test_the_response_budget_stops_the_episode_and_scores_the_world_as_it_stands(worker, readme_files,
                                                                                   after_the_last_write):
    loop_file = next(readme_files.glob("*.yaml"))
    for index in range(1, 64):  # a task the world alone judges: once its last write is made, it is done
        _, row = batch_of(worker, readme_files, index)
        task = task_of(row, loop_file)
        if not task.evaluation.communicate_info and any('"name": "modify_' in t for t in gold_texts(task)):
            break
    texts = gold_texts(task)
    budget = 40  # inside the first turn: nothing is done, nothing is earned
    if after_the_last_write:  # room for every gold call and its result, one token more, no room for the goodbye
        full = loop_with_budget(worker, loop_file, texts, 4096)
        asyncio.run(full.run({}, **row))
        calls = full.server_manager.calls
        last_write = max(i for i, t in enumerate(texts) if '"name": "modify_' in t)
        budget = len(calls[last_write + 1]["prompt_ids"]) - len(calls[0]["prompt_ids"])
    loop = loop_with_budget(worker, loop_file, texts, budget)
    output = asyncio.run(loop.run({"temperature": 1.0}, **row))
    assert len(output.response_ids) == len(output.response_mask) <= budget
    assert output.extra_fields["reward_extra_info"]["mua_cut"] == 1.0
    assert output.reward_score == (1.0 if after_the_last_write else 0.0)
    assert all(c["params"]["max_tokens"] <= budget for c in loop.server_manager.calls)


def _wrap(config: Any) -> Any:
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    return DictConfigWrap(config)


def test_rows_without_a_task_are_refused_in_one_line(worker, readme_files):
    _, row = batch_of(worker, readme_files, 0)
    loop = mua_verl.MuaAgentLoop(
        trainer_config=_wrap(worker.config), server_manager=ScriptedServer(worker.tokenizer, []),
        tokenizer=worker.tokenizer, processor=None, dataset_cls=RLHFDataset, data_config=_wrap(worker.config.data))
    with pytest.raises(ValueError, match="extra_info"):
        asyncio.run(loop.run({}, **{**row, "extra_info": {"index": 0}}))


class OpensNot(UserSimulator):
    """The loop's user, except that on one task it fails to open (an LLM user whose server is down)."""

    name = "opens-not"

    def __init__(self, inner: UserSimulator, task_id: str) -> None:
        self.inner, self.task_id = inner, task_id

    async def start(self, task: Any, *, seed: int | None = None, tools: Any = None) -> UserReply:
        if task.id == self.task_id:
            raise UserSimulatorError("the user model is down")
        return await self.inner.start(task, seed=seed, tools=tools)

    async def respond(self, view: Any) -> UserReply:
        return await self.inner.respond(view)


def assert_void(ids: list[int], mask: list[int], scores: Any, extra: dict[str, Any]) -> None:
    """A sample nothing can be learnt from: no token the model is trained on, reward 0, flagged ``mua_void``."""
    assert len(ids) == 1 and mask == [0] and scores.sum().item() == 0.0
    assert extra["mua_void"] == 1.0 and extra["mua_reward"] == 0.0


@pytest.mark.parametrize("logprobs", [False, True])
def test_a_user_who_never_opens_gives_a_void_sample_beside_a_trained_one(worker, readme_files, monkeypatch,
                                                                         logprobs):
    # verl's own worker on a batch of two rows: the first row's user fails to open, the second plays gold
    dataset = RLHFDataset(str(next(readme_files.glob("*.parquet"))), worker.tokenizer, worker.config.data, None)
    rows = [dataset[0], dataset[1]]
    loop_file = next(readme_files.glob("*.yaml"))
    failing = rows[0]["extra_info"]["task_id"]
    real = mua_gym.make_async

    def make_async(env_id: str, **kwargs: Any) -> mua_gym.AsyncMuaEnv:
        env = real(env_id, **kwargs)
        env.user = OpensNot(env.user, failing)
        return env

    monkeypatch.setattr(mua_verl.mua_gym, "make_async", make_async)
    worker.llm_client = ScriptedServer(worker.tokenizer, gold_texts(task_of(rows[1], loop_file)), logprobs=logprobs)
    batch = DataProto.from_single_dict(collate_fn(rows))
    monkeypatch.setattr(worker, "rollout_config", dataclasses.replace(worker.rollout_config,
                                                                     calculate_log_probs=logprobs))
    output = asyncio.run(worker.generate_sequences(batch))
    prompt_width = output.batch["prompts"].shape[1]
    lengths = output.batch["attention_mask"][:, prompt_width:].sum(dim=1).tolist()
    masks = output.batch["response_mask"]
    extra = [{k: output.non_tensor_batch[k][i] for k in ("mua_void", "mua_reward")} for i in range(2)]
    assert_void(output.batch["responses"][0, :lengths[0]].tolist(), masks[0, :lengths[0]].tolist(),
                output.batch["rm_scores"][0], extra[0])
    assert masks[0].sum().item() == 0  # nothing of the void row is trained on
    assert output.batch["rm_scores"][1].sum().item() == 1.0 and extra[1]["mua_void"] == 0.0
    assert len(worker.llm_client.calls) == len(runs_of_ones(*unpadded_row(output, 1)))  # only row 1 was generated
    assert ("rollout_log_probs" in output.batch) is logprobs


def unpadded_row(output: DataProto, i: int) -> tuple[list[int], list[int]]:
    length = int(output.batch["attention_mask"][i, output.batch["prompts"].shape[1]:].sum())
    return (output.batch["responses"][i, :length].tolist(), output.batch["response_mask"][i, :length].tolist())


def test_a_prompt_over_the_prompt_length_gives_a_void_sample_not_a_cut_one(worker, readme_files):
    _, row = batch_of(worker, readme_files, 0)
    loop = loop_with_budget(worker, next(readme_files.glob("*.yaml")), [], 4096)
    loop.prompt_length = 1000
    output = asyncio.run(loop.run({"logprobs": True}, **row))
    assert_void(output.response_ids, output.response_mask, torch.tensor([output.reward_score]),
                output.extra_fields["reward_extra_info"])
    assert len(output.prompt_ids) == 1000 and output.response_logprobs == [0.0]
    assert loop.server_manager.calls == []  # no model turn was generated on a prompt the env never gave


def test_the_agent_loop_file_carries_the_env_keywords(readme_files):
    entries = OmegaConf.to_container(OmegaConf.load(next(readme_files.glob("*.yaml"))))
    assert entries[0]["name"] == "mua_gym" and entries[0]["_target_"] == "mua_gym.integrations.verl.MuaAgentLoop"
    assert json.dumps(entries[0]["env_kwargs"])  # plain data hydra can pass on



@pytest.mark.parametrize("how", ["fault", "error"])
def test_an_episode_void_midway_gives_a_void_sample(worker, readme_files, monkeypatch, caplog, how):
    # the gold play, whose user breaks at its first reply (a fault under on_user_fault="void", or an error),
    # after the model's first turns: the whole response is dropped, not only what came after
    from integrations.void_users import Breaks

    _, row = batch_of(worker, readme_files, 1)
    loop_file = next(readme_files.glob("*.yaml"))
    real = mua_gym.make_async
    users = []

    def make_async(env_id: str, **kwargs: Any) -> mua_gym.AsyncMuaEnv:
        env = real(env_id, **{**kwargs, "on_user_fault": "void"})
        env.user = Breaks(how, 1)
        users.append(env.user)
        return env

    monkeypatch.setattr(mua_verl.mua_gym, "make_async", make_async)
    loop = loop_with_budget(worker, loop_file, gold_texts(task_of(row, loop_file)), 4096)
    output = asyncio.run(loop.run({"logprobs": True}, **row))
    assert users[0].broke == 1 and len(loop.server_manager.calls) > 1  # the model had played turns
    assert_void(output.response_ids, output.response_mask, torch.tensor([output.reward_score]),
                output.extra_fields["reward_extra_info"])
    assert output.response_logprobs == [0.0]
    assert f"void sample (user_{how})" in caplog.text


def test_mua_grpo_leaves_void_samples_out_of_their_groups_statistics():
    """verl's trainer path (``compute_advantage`` with ``adv_estimator="mua_grpo"``, found through the plugin entry
    point that ``import verl`` loads) against verl's own GRPO on the same batch without its void rows."""
    import numpy as np
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from mua_gym.integrations.verl_advantage import grpo_without_void

    assert core_algos.get_adv_estimator_fn("mua_grpo") is grpo_without_void
    scores = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.5]
    void = [False, False, True, False, False, True, False, True]
    uids = np.array(["a", "a", "a", "a", "b", "b", "b", "c"], dtype=object)  # group c: one void sample alone
    length = 5
    mask = torch.tensor([[0] * length if v else [1, 1, 0, 1, 0] for v in void], dtype=torch.float32)
    rewards = torch.zeros(len(scores), length)
    rewards[:, 3] = torch.tensor(scores)  # the reward sits on the last token the model wrote
    for normalise in (True, False):
        data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                                   non_tensors={"uid": uids})
        config = AlgoConfig(adv_estimator="mua_grpo", norm_adv_by_std_in_grpo=normalise)
        ours = compute_advantage(data, adv_estimator="mua_grpo", config=config).batch["advantages"]
        live = [i for i, v in enumerate(void) if not v]
        theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards[live], mask[live], uids[live],
                                                              norm_adv_by_std_in_grpo=normalise)
        assert torch.allclose(ours[live], theirs)
        assert ours[[i for i, v in enumerate(void) if v]].abs().sum().item() == 0.0
        # verl's own GRPO counts the void 0.0s: group a's real advantages differ from ours
        everyone, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, uids, norm_adv_by_std_in_grpo=normalise)
        assert not torch.allclose(everyone[live], ours[live])
