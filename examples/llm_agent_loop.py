"""An LLM agent loop through litellm: any model litellm reaches plays the agent.

    python examples/llm_agent_loop.py --model openai/gpt-4o-mini
    python examples/llm_agent_loop.py --model openai/smollm2 --api-base http://127.0.0.1:8000/v1

Without --model it uses litellm's offline double (mock_response), so it runs with no network and no key.
API keys come from the environment (e.g. OPENAI_API_KEY) and are never printed.
"""

import argparse
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import mua_gym  # noqa: E402
from mua_gym.eval.agents import LiteLLMAgent  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--model", default=None)
parser.add_argument("--api-base", default=None)
parser.add_argument("--episodes", type=int, default=2)
args = parser.parse_args()

kwargs = {}
if args.api_base:
    kwargs.update(api_base=args.api_base, api_key=os.environ.get("OPENAI_API_KEY", "none"))
if args.model is None:  # offline: litellm answers with this text instead of calling a model
    kwargs["mock_response"] = "Could you tell me the email address on your account?"
agent = LiteLLMAgent(args.model or "openai/offline-double", **kwargs)

env = mua_gym.make("mua/Mock-v0", max_turns=10)
for episode in range(args.episodes):
    observation, info = env.reset(seed=episode)
    agent.reset(info)
    done = False
    while not done:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation))
        done = terminated or truncated
    trajectory = env.unwrapped.trajectory()
    print(trajectory.render_text())
    print(f"reward {reward} ({trajectory.termination_reason}); tokens {agent.usage}\n")
