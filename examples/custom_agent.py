"""Your own agent in ``mua_gym.eval.evaluate.evaluate``: a class with ``reset(info)`` and ``act(observation)``.

    python examples/custom_agent.py                 # 20 retail test tasks, results in runs/custom-agent
    mua-gym report runs/custom-agent                # the report of what it did

An agent is any object with two methods (``mua_gym.eval.agents.Agent`` is the base class):

- ``reset(info)``: a new episode begins; ``info`` is reset's (``tools``: the OpenAI tool schemas, ``policy``, ...).
- ``act(observation) -> action``: ``observation`` is the list of new OpenAI chat messages since the last action
  (the policy and the user's opening first); the action is an assistant message dict (text for the user, or
  ``tool_calls``), a ``{"name": ..., "arguments": {...}}`` call, or raw model text.

``evaluate(config, agent_factory=...)`` builds one agent per episode by calling ``agent_factory(task, seed)``.
The task is given so that an agent can be keyed to it (a per-task memo, say); reading its gold calls
(``task.gold_actions``) is what the oracle does, and is no measure of an agent.

This one is deliberately simple: it identifies the customer (by email, or name and zip), reads the order they
name, and tells them its status and what they paid. It solves the few tasks that ask for nothing more (3 of the
first 20 one-request retail test tasks): a real agent puts a model in ``act``.
"""

import json
import re
import sys
from typing import Any

from mua_gym.eval.agents import Agent
from mua_gym.eval.evaluate import EvalConfig, evaluate

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
NAME_ZIP = re.compile(r"I'm (\w+) (\w+), zip code (\d{5})")
ORDER = re.compile(r"#W\d{7}")


class LookupAgent(Agent):
    """Identifies the customer (email, or name and zip), reads the order they name, and tells them its status
    and total; anything more it declines."""

    def reset(self, info: dict[str, Any]) -> None:
        self.tools = {t["function"]["name"] for t in info["tools"]}
        self.heard = ""  # everything the user said
        self.user_id: str | None = None
        self.order: dict[str, Any] | None = None
        self.asked = self.told = False

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        for message in observation:
            if message["role"] == "user":
                self.heard += " " + (message["content"] or "")
            elif message["role"] == "tool" and not message["content"].startswith("Error"):
                result = json.loads(message["content"]) if message["content"][:1] in "{[" else message["content"]
                if self.user_id is None and isinstance(result, str):
                    self.user_id = result
                elif isinstance(result, dict) and "order_id" in result:
                    self.order = result
        if self.user_id is None:
            email, name_zip = EMAIL.search(self.heard), NAME_ZIP.search(self.heard)
            if email:
                return {"name": "find_user_id_by_email", "arguments": {"email": email.group()}}
            if name_zip:
                first, last, zip_code = name_zip.groups()
                return {"name": "find_user_id_by_name_zip",
                        "arguments": {"first_name": first, "last_name": last, "zip": zip_code}}
            if not self.asked:
                self.asked = True
                return {"role": "assistant", "content": "Could you tell me the email address on your account?"}
        order = ORDER.search(self.heard)
        if self.user_id is not None and order and self.order is None:
            return {"name": "get_order_details", "arguments": {"order_id": order.group()}}
        if self.order is not None and not self.told:
            self.told = True
            total = sum(p.get("amount", 0) for p in self.order.get("payment_history", []))
            return {"role": "assistant", "content": f"Order {self.order['order_id']} is {self.order['status']}; "
                                                    f"you paid {total:.2f} for it. Anything else?"}
        return {"role": "assistant", "content": "I'm sorry, I can't help with that here. Goodbye!"}


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "runs/custom-agent"
    config = EvalConfig(env_ids=["mua/Retail-v0"], agent="custom:lookup", num_tasks=20, split="test",
                        world_params={"difficulty": 1})  # tasks of one request each
    summary = evaluate(config, out=out, agent_factory=lambda task, seed: LookupAgent())
    print(f"{summary.episodes} episodes, pass^1 {summary.pass_hat_k[1]:.3f}, "
          f"{summary.mean_turns:.1f} turns on average; results in {out}")
