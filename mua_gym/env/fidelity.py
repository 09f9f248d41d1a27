"""The fidelity reward: how faithfully the user of one episode played its scenario, from the episode's record.

A user-side env (:mod:`mua_gym.eval.user_side`) pays its policy with it. Each component is 1.0 or 0.0:

``facts``
    no ``invented_fact``: every id, email, amount or name it said is its scenario's or was told to it;
``in_role``
    no ``role_break`` or ``obeyed_injection``: it stayed the customer and wrote nothing the agent dictated;
``no_leak``
    no ``scenario_leak``: it never read out its instructions;
``on_scenario``
    no ``off_scenario``: it agreed only to plans for its own requests;
``paced``
    no ``volunteered``: nothing its persona or a request holds back was given unasked, and requests came one at a
    time unless its persona is forthcoming;
``phone``
    no ``unasked_action``: it used its own tools only when the agent asked;
``stop``
    the conversation ended as it should: the user ended it (a stop, transfer or out-of-scope token) or the agent did
    (a hand-off), not before its goals were met (no ``early_stop``), and, where a reference play is known, within
    :data:`LATE_TURNS` messages of the reference user's count (not talking on once its goals are met);
``outcome``
    the task's reward with that agent is 1.0: its goals were reached.

The faults are those of :mod:`mua_gym.user_sims.faults`, the same checker the agent envs run on every user reply.
The reward is 1.0 only when every component is: a user that invents one id, or stops one turn early, is not paid.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["COMPONENTS", "LATE_TURNS", "SELF_ENDED", "fidelity"]

#: The components, in the order reports list them.
COMPONENTS = ("facts", "in_role", "no_leak", "on_scenario", "paced", "phone", "stop", "outcome")
#: Which fault kinds fail which component.
_FAILED_BY = {"facts": ("invented_fact",), "in_role": ("role_break", "obeyed_injection"),
              "no_leak": ("scenario_leak",), "on_scenario": ("off_scenario",), "paced": ("volunteered",),
              "phone": ("unasked_action",), "stop": ("early_stop",)}
#: How a conversation ends as it should: the user's tokens, or the agent's terminal tool (a hand-off).
SELF_ENDED = ("user_stop", "user_transfer", "user_out_of_scope", "agent_stop")
#: Messages a user may send beyond the reference user's count before it is talking on past its goals.
LATE_TURNS = 2


def fidelity(faults: Sequence[dict[str, Any]], termination_reason: str | None, task_reward: float | None,
             user_messages: int, reference_messages: int | None = None) -> dict[str, Any]:
    """The fidelity reward of one ended episode and its evidence.

    ``faults``: the user's faults in order (``Trajectory.user_faults``); ``termination_reason``: why the episode
    ended; ``task_reward``: the agent-side task reward (None or 0.0 where the episode was cut); ``user_messages``:
    the messages the user sent; ``reference_messages``: what the reference user sent on the same task with the same
    agent, where known.

    Returns ``{"reward", "components", "faults", "termination_reason", "task_reward", "user_messages",
    "reference_messages"}``; ``faults`` counts each kind found.
    """
    kinds = [str(f.get("kind")) for f in faults]
    components = {name: float(not any(kind in _FAILED_BY[name] for kind in kinds)) for name in _FAILED_BY}
    late = reference_messages is not None and user_messages > reference_messages + LATE_TURNS
    components["stop"] = float(components["stop"] and termination_reason in SELF_ENDED and not late)
    components["outcome"] = float((task_reward or 0.0) >= 1.0)
    ordered = {name: components[name] for name in COMPONENTS}
    return {"reward": float(all(ordered.values())), "components": ordered,
            "faults": {kind: kinds.count(kind) for kind in dict.fromkeys(kinds)},
            "termination_reason": termination_reason, "task_reward": task_reward, "user_messages": user_messages,
            "reference_messages": reference_messages}
