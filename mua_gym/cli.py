"""``mua-gym``: play episodes from the command line.

    mua-gym run --env mua/Mock-v0 --agent oracle --user scripted --episodes 3
    mua-gym list
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

__all__ = ["main"]


def _key_values(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _run(args: argparse.Namespace) -> int:
    import mua_gym
    from mua_gym.agents import make_agent

    env_kwargs: dict[str, Any] = {"user": args.user, "split": args.split, "world": args.world,
                                  "max_turns": args.max_turns}
    if args.user_arg:
        env_kwargs["user_kwargs"] = _key_values(args.user_arg)
    if args.judge:
        env_kwargs["judge"] = args.judge
        env_kwargs["judge_kwargs"] = _key_values(args.judge_arg)
    env_kwargs.update(_key_values(args.env_arg))
    env = mua_gym.make(args.env, **env_kwargs)
    core = env.unwrapped.core
    agent_kwargs = _key_values(args.agent_arg)
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    rewards: list[float] = []
    started = time.perf_counter()
    try:
        for episode in range(args.episodes):
            seed = args.seed + episode
            options = {"task_id": args.task} if args.task else None
            observation, info = env.reset(seed=seed, options=options)
            agent = make_agent(args.agent, task=core.task, seed=seed, **agent_kwargs)
            agent.reset(info)
            done = False
            reward = 0.0
            while not done:
                try:
                    action = agent.act(observation)
                except Exception as exc:  # an agent that fails ends its episode, not the run
                    print(f"agent error: {type(exc).__name__}: {exc}", file=sys.stderr)
                    break
                observation, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            trajectory = env.unwrapped.trajectory()
            rewards.append(float(reward))
            if not args.quiet:
                print(trajectory.render_text())
                print()
            else:
                print(f"episode {episode}: task {trajectory.task_id} reward {reward:.2f} "
                      f"({trajectory.termination_reason}, {trajectory.turns} turns)")
            if out:
                out.write(trajectory.to_json_line() + "\n")
    finally:
        env.close()
        if out:
            out.close()
    elapsed = time.perf_counter() - started
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    print(f"{len(rewards)} episodes, mean reward {mean:.3f}, {len(rewards) / elapsed:.1f} episodes/s")
    return 0


def _list(args: argparse.Namespace) -> int:
    import mua_gym

    for name in mua_gym.available_domains():
        print(f"{mua_gym.env_id(name):24s} {name}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mua-gym", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="play episodes and print transcripts and rewards")
    run.add_argument("--env", default="mua/Mock-v0")
    run.add_argument("--agent", default="oracle", help="oracle, random, or litellm:<model>")
    run.add_argument("--user", default=None,
                     help="scripted, scenario, or litellm:<model> (default: the domain's; scenario where the user acts)")
    run.add_argument("--user-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="keyword for the user simulator, e.g. api_base=http://127.0.0.1:8000/v1")
    run.add_argument("--judge", help="litellm:<model> to judge NL assertions (off by default)")
    run.add_argument("--judge-arg", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--episodes", type=int, default=1)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--split", default="train")
    run.add_argument("--world", default=None, help="the world and task source (default: the domain's)")
    run.add_argument("--task", help="a task id (default: drawn with the seed)")
    run.add_argument("--max-turns", type=int, default=30)
    run.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="keyword for the agent, e.g. api_base=http://127.0.0.1:8000/v1")
    run.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--jsonl", help="write each trajectory as one JSON line to this file")
    run.add_argument("--quiet", action="store_true", help="one line per episode instead of transcripts")
    run.set_defaults(handler=_run)
    lister = sub.add_parser("list", help="list the registered environments")
    lister.set_defaults(handler=_list)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
