"""Secrets never leak; misconfigured models fail fast, in one line, without litellm's banner."""

import json
import time
from contextlib import nullcontext

import httpx
import litellm
import pytest

from mua_gym import EvaluationSpec, MuaEnv, Task
from mua_gym.agents import AgentError, LiteLLMAgent
from mua_gym.judge import LLMJudge
from mua_gym.llm_client import (
    JudgeModelError, ModelConfigError, UserModelError, failure_kind, retries_allowed,
)
from mua_gym.redact import MIN_SECRET_LENGTH, PLACEHOLDER, Redactor, redact, secret_values
from mua_gym.user_sims.memo import ResponseMemo

from error_llm_server import REQUESTS, error_llm_server
from scripted_llm import POSITION, script

KEY = "AbC123xyzQQQ"  # a key of no known shape: only knowing it was configured can redact it
REFUSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens on loopback


@pytest.fixture(scope="module")
def api_base():
    with error_llm_server() as base:
        # litellm builds its OpenAI client and error mapping on first use (~1 s): pay that here, not in timed tests.
        for model in ("ok", "missing"):
            warm = MuaEnv("mock", user=f"litellm:openai/{model}", user_kwargs={"api_base": base, "api_key": "x"})
            _play_one_user_turn(warm)
            warm.close()
            with pytest.raises(UserModelError) if model == "missing" else nullcontext():  # the probe's sync path
                MuaEnv("mock", user=f"litellm:openai/{model}", user_kwargs={"api_base": base, "api_key": "x"},
                       check_models=True)
        yield base


def _play_one_user_turn(env):
    env.reset(options={"task_id": "mock-cancel-card"})
    return env.step("How can I help?")


# -- redaction -------------------------------------------------------------------------------------------------
def test_redact_replaces_configured_environment_and_key_shaped_secrets(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", "envSecret42xy")
    configured = {"api_key": KEY, "api_base": "http://127.0.0.1:8000/v1",
                  "extra_headers": {"Authorization": "Bearer tok_9f8e7d6c", "X-Trace": "trace-visible-1"}}
    text = (f"bad key {KEY}; env envSecret42xy; header tok_9f8e7d6c; shaped sk-proj-abcdefgh12 and "
            "AIzaSyA1234567890abcdefghijk; base http://127.0.0.1:8000/v1; trace trace-visible-1")
    out = Redactor.of(configured)(text)
    for secret in (KEY, "envSecret42xy", "tok_9f8e7d6c", "sk-proj-abcdefgh12", "AIzaSyA1234567890abcdefghijk"):
        assert secret not in out
    assert out.count(PLACEHOLDER) == 5
    assert "http://127.0.0.1:8000/v1" in out and "trace-visible-1" in out  # only credentials go


def test_short_placeholder_keys_do_not_turn_errors_into_mush(monkeypatch):
    monkeypatch.setenv("SOME_TOKEN", "abc")
    assert secret_values({"api_key": "x", "token": "EMPTY"}) == set()
    text = "max tokens exceeded: x must be < 5 (abc)"
    assert Redactor.of({"api_key": "x"})(text) == text
    assert len("x" * MIN_SECRET_LENGTH) == MIN_SECRET_LENGTH and secret_values({"key": "x" * MIN_SECRET_LENGTH})
    # Words that merely contain a key-shaped prefix are not keys.
    assert redact("task-abcdefghijk and monkey_business_plan") == "task-abcdefghijk and monkey_business_plan"


def test_a_longer_secret_containing_a_shorter_one_goes_whole():
    out = redact(f"{KEY}-suffix and {KEY}", {KEY, f"{KEY}-suffix"})
    assert out == f"{PLACEHOLDER} and {PLACEHOLDER}"


def test_redaction_time_grows_linearly_on_adversarial_text():
    def seconds(n):
        text = ("sk-" * n) + ("Bearer " + " " * n) + ("key_" + "-" * 7) * n
        start = time.perf_counter()
        redact(text, {KEY})
        return time.perf_counter() - start

    seconds(1000)
    small, large = seconds(20_000), seconds(160_000)
    assert large < 40 * max(small, 1e-4)  # 8x the text: a quadratic scan would take 64x


# -- failure classification -------------------------------------------------------------------------------------
@pytest.mark.parametrize("error, kind", [
    (litellm.AuthenticationError("no", llm_provider="x", model="m"), "permanent"),
    (litellm.BadRequestError("no", llm_provider="x", model="m"), "permanent"),
    (litellm.NotFoundError("no", llm_provider="x", model="m"), "permanent"),
    (litellm.PermissionDeniedError("no", llm_provider="x", model="m",
                                   response=httpx.Response(403, request=httpx.Request("POST", "http://h"))),
     "permanent"),
    (litellm.ContextWindowExceededError("no", llm_provider="x", model="m"), "permanent"),
    (TypeError("unexpected keyword"), "permanent"),
    (litellm.RateLimitError("slow", llm_provider="x", model="m"), "transient"),
    (litellm.Timeout("slow", llm_provider="x", model="m"), "transient"),
    (litellm.ServiceUnavailableError("503", llm_provider="x", model="m"), "transient"),
    (litellm.APIConnectionError("refused", llm_provider="x", model="m"), "unreachable"),
    (TimeoutError(), "transient"),
    (ValueError("a garbled response"), "transient"),
    (litellm.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`",
                                 llm_provider="openai", model="m"), "permanent"),
])
def test_failure_kinds(error, kind):
    assert failure_kind(error) == kind
    assert retries_allowed(kind, 3) == {"permanent": 0, "unreachable": 1, "transient": 3}[kind]


# -- the LLM user ------------------------------------------------------------------------------------------------
def test_permanent_user_errors_end_the_episode_at_once_and_leak_nothing(api_base, tmp_path, capfd):
    memo_path = tmp_path / "memo.sqlite"
    REQUESTS.clear()
    start = time.perf_counter()
    env = MuaEnv("mock", user="litellm:openai/badkey",
                 user_kwargs={"api_base": api_base, "api_key": KEY, "memo": str(memo_path), "backoff": 1.0})
    obs, reward, terminated, truncated, info = _play_one_user_turn(env)
    elapsed = time.perf_counter() - start
    assert truncated and info["termination_reason"] == "user_error" and reward == 0.0
    assert "AuthenticationError" in info["user_error"] and "not retried" in info["user_error"]
    assert REQUESTS["badkey"] == 1 and elapsed < 1.0  # one request; the 1 s backoff was never slept
    assert KEY not in info["user_error"] and PLACEHOLDER in info["user_error"]  # the server did echo it
    assert KEY not in env.unwrapped.trajectory().to_json_line()
    env.close()
    ResponseMemo(memo_path).close()
    assert KEY.encode() not in memo_path.read_bytes()
    printed = capfd.readouterr()
    assert "Give Feedback" not in printed.out + printed.err and KEY not in printed.out + printed.err


def test_an_odd_key_echoed_by_a_transient_error_is_redacted_after_the_retries(api_base):
    REQUESTS.clear()
    env = MuaEnv("mock", user="litellm:openai/busy",
                 user_kwargs={"api_base": api_base, "api_key": KEY, "backoff": 0.001, "max_retries": 2})
    *_, truncated, info = _play_one_user_turn(env)
    assert truncated and "after 3 tries" in info["user_error"] and REQUESTS["busy"] == 3
    assert KEY not in info["user_error"] and PLACEHOLDER in info["user_error"]


def test_environment_keys_are_redacted_even_when_not_configured(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", "zz9PluralZAlpha")
    error = litellm.AuthenticationError("rejected key zz9PluralZAlpha", llm_provider="scripted", model="x")
    env = MuaEnv("mock", user=f"litellm:{script('echo-env', ['Hello.', error, 'never reached'])}")
    *_, truncated, info = _play_one_user_turn(env)
    assert truncated and "zz9PluralZAlpha" not in info["user_error"]
    assert POSITION["echo-env"] == 2  # the opening and one failed call: a permanent error is not retried


def test_unreachable_server_is_retried_once(capfd):
    env = MuaEnv("mock", user="litellm:openai/x",
                 user_kwargs={"api_base": REFUSED, "api_key": KEY, "backoff": 0.05, "max_retries": 3})
    start = time.perf_counter()
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    *_, truncated, info = env.step("Hi")
    assert truncated and "after 2 tries" in info["user_error"] and time.perf_counter() - start < 2.0
    assert "Give Feedback" not in capfd.readouterr().out


# -- the fail-fast probe -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("model, kwargs, expected", [
    ("foo/bar", {}, "user model: unknown provider 'foo' in model 'foo/bar': use a litellm model name such as "
                    "openai/gpt-4o-mini"),
    ("gpt-nonexistent", {}, "user model: litellm cannot tell the provider of model 'gpt-nonexistent': name it "
                            "provider/model, e.g. openai/gpt-nonexistent"),
    ("openai/missing", {"api_key": KEY}, "user model: model 'openai/missing' not found at {base}: check the model "
                                         "name"),
    ("openai/badkey", {"api_key": KEY}, "user model: authentication failed for openai/badkey: set OPENAI_API_KEY "
                                        "or pass user_kwargs={'api_key': ...}"),
    ("openai/x", {"api_base": REFUSED, "api_key": KEY}, f"user model: cannot reach {REFUSED} for openai/x: is the "
                                                       "server running?"),
])
def test_check_models_raises_one_line_naming_the_fix(api_base, monkeypatch, model, kwargs, expected):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    kwargs = {"api_base": api_base, **kwargs} if model.startswith("openai/") else kwargs
    start = time.perf_counter()
    with pytest.raises(UserModelError) as caught:
        MuaEnv("mock", user=f"litellm:{model}", user_kwargs=kwargs, check_models=True)
    assert str(caught.value) == expected.replace("{base}", api_base)
    assert isinstance(caught.value, (ValueError, ModelConfigError)) and KEY not in str(caught.value)
    assert time.perf_counter() - start < 1.0


def test_check_models_passes_a_working_model_and_probes_only_when_asked(api_base):
    REQUESTS.clear()
    MuaEnv("mock", user="litellm:openai/ok", user_kwargs={"api_base": api_base, "api_key": KEY})
    assert REQUESTS["ok"] == 0
    env = MuaEnv("mock", user="litellm:openai/ok", user_kwargs={"api_base": api_base, "api_key": KEY},
                 check_models=True)
    assert REQUESTS["ok"] == 1
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    assert obs[-1]["content"] == "OK" and REQUESTS["ok"] == 2
    MuaEnv("mock", user="scripted", check_models=True)  # nothing to probe


def test_a_recorded_user_replays_without_its_model(tmp_path):
    with error_llm_server() as gone:
        kwargs = {"api_base": gone, "api_key": "x", "memo": str(tmp_path / "memo.sqlite")}
        MuaEnv("mock", user="litellm:openai/ok", user_kwargs=kwargs).reset(options={"task_id": "mock-cancel-card"})
    # The server has stopped: the probe is skipped and the opening replays from the memo.
    env = MuaEnv("mock", user="litellm:openai/ok", user_kwargs=kwargs, check_models=True)
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    assert obs[-1]["content"] == "OK" and "user_error" not in info
    with pytest.raises(UserModelError, match="cannot reach"):  # without the recording the probe does run
        MuaEnv("mock", user="litellm:openai/ok", user_kwargs={**kwargs, "memo": str(tmp_path / "new.sqlite")},
               check_models=True)


def test_check_models_probes_the_judge(api_base):
    with pytest.raises(JudgeModelError, match=r"^judge model: authentication failed .* judge_kwargs="):
        MuaEnv("mock", judge="litellm:openai/badkey", judge_kwargs={"api_base": api_base, "api_key": KEY},
               check_models=True)


# -- the judge and the agent -------------------------------------------------------------------------------------
def test_judge_errors_carry_no_key(api_base):
    task = Task(id="nl", domain="mock", script=["Hi."],
                evaluation=EvaluationSpec(reward_basis=["NL_ASSERTION"], nl_assertions=["greets"]))
    env = MuaEnv("mock", judge=LLMJudge("openai/badkey", api_base=api_base, api_key=KEY))
    env.reset(options={"task": task})
    *_, reward, terminated, truncated, info = env.step("Hello!")
    error = info["reward_info"]["judge_error"]
    assert terminated and reward == 0.0 and error.startswith("JudgeError: judge model call failed: Authentication")
    assert KEY not in error and PLACEHOLDER in error and KEY not in env.unwrapped.trajectory().to_json_line()


def test_agent_errors_carry_no_key(api_base):
    agent = LiteLLMAgent("openai/badkey", api_base=api_base, api_key=KEY)
    agent.reset({"tools": []})
    with pytest.raises(AgentError) as caught:
        agent.act([{"role": "user", "content": "Hi"}])
    assert "AuthenticationError" in str(caught.value) and KEY not in str(caught.value)
    assert KEY not in json.dumps(caught.value.args)
