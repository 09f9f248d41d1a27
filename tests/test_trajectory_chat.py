"""Trajectory.to_chat: what the agent saw, with trainable flags aligned to exactly those messages."""

from __future__ import annotations

import json

import pytest

from mua_gym import MuaEnv
from mua_gym.env.trajectory import Trajectory

from episodes import run_oracle


def _oracle_trajectory(domain: str, user: str) -> Trajectory:
    env = MuaEnv(domain, user=user, split="test")
    task = env.core.tasks("test")[0]
    reward, *_ = run_oracle(env, task)
    assert reward == 1.0
    traj = env.unwrapped.trajectory()
    env.close()
    return traj


def test_telecom_flags_align_with_the_visible_messages_despite_hidden_user_traffic():
    traj = _oracle_trajectory("telecom", "scenario")
    hidden = [e for e in traj.entries if not e.visible_to_agent]
    assert hidden, "a telecom oracle episode has the user's own phone calls"
    chat = traj.to_chat()
    assert chat.messages == traj.agent_messages()
    assert len(chat.trainable) == len(chat.messages)
    assert chat.trainable == [m["role"] == "assistant" for m in chat.messages]
    assert chat.tools == traj.tools and chat.tools
    # the old mistake: flags of all entries zipped with the visible messages put loss on non-agent turns
    misaligned = [e.trainable for e in traj.entries][:len(chat.messages)]
    assert misaligned != chat.trainable


def test_arguments_as_json_strings_or_dicts():
    traj = _oracle_trajectory("retail", "scripted")
    as_json = traj.to_chat()
    as_dict = traj.to_chat(arguments="dict")
    calls_json = [c for m in as_json.messages for c in m.get("tool_calls") or []]
    calls_dict = [c for m in as_dict.messages for c in m.get("tool_calls") or []]
    assert calls_json and len(calls_json) == len(calls_dict)
    for a, b in zip(calls_json, calls_dict):
        assert isinstance(a["function"]["arguments"], str)
        assert json.loads(a["function"]["arguments"]) == b["function"]["arguments"]
    assert traj.to_chat().messages == as_json.messages  # decoding copies: the record is unchanged
    with pytest.raises(ValueError, match="'json' or 'dict'"):
        traj.to_chat(arguments="yaml")  # type: ignore[arg-type]


def test_malformed_arguments_stay_text_and_the_example_round_trips():
    env = MuaEnv("mock")
    env.reset(options={"task_id": "mock-cancel-card"})
    env.step('<tool_call>{"name": "find_customer_by_email", "arguments": "not json"}</tool_call>')
    env.step({"name": "find_customer_by_email", "arguments": {"email": "ana@example.com"}})
    traj = env.unwrapped.trajectory()
    chat = traj.to_chat(arguments="dict")
    args = [c["function"]["arguments"] for m in chat.messages for c in m.get("tool_calls") or []]
    assert args == ["not json", {"email": "ana@example.com"}]
    assert chat.trainable == [m["role"] == "assistant" for m in chat.messages]
    assert type(chat).model_validate_json(chat.model_dump_json()) == chat
    assert Trajectory.from_json_line(traj.to_json_line()).to_chat() == traj.to_chat()
    env.close()
