"""Secrets never leak; misconfigured models fail fast, in one line, without litellm's banner."""

import asyncio
import base64
import json
import time
from contextlib import nullcontext

import httpx
import litellm
import pytest

from mua_gym import EvaluationSpec, MuaEnv, Task, cli
from mua_gym.eval.agents import AgentError, LiteLLMAgent
from mua_gym.llm.judge import LLMJudge
from mua_gym.llm.client import (
    AgentModelError, CallLimits, JudgeModelError, ModelConfigError, UserModelError, failure_kind, one_line,
    retries_allowed, split_call_limits,
)
from mua_gym.llm.redact import (MIN_SECRET_LENGTH, PLACEHOLDER, Redactor, is_secret_name, masked, redact, secret_values,
                             url_secrets)
from mua_gym.user_sims import LLMUser
from mua_gym.user_sims.reply_memo import ResponseMemo

from error_llm_server import REQUESTS, error_llm_server
from scripted_llm import POSITION, script

KEY = "AbC123xyzQQQ"  # a key of no known shape: only knowing it was configured can redact it
REFUSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens on loopback
PASSWORD = "s3cretPassw0rd"
BASIC = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()  # what HTTP basic auth sends for bob:PASSWORD


def with_userinfo(base):
    return base.replace("http://", f"http://bob:{PASSWORD}@")


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


@pytest.fixture
def envs():
    """``MuaEnv`` for this test, closed after it: an env left to the garbage collector runs its loop in a finalizer,
    which can land inside the AST builder of CPython 3.11.7 and crash the session ("recursion depth mismatch")."""
    made = []

    def make(*args, **kwargs):
        made.append(MuaEnv(*args, **kwargs))
        return made[-1]

    yield make
    for env in made:
        env.close()


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


def test_redact_strips_url_userinfo_and_credential_query_parameters():
    text = (f"cannot reach http://bob:{PASSWORD}@127.0.0.1:9/v1 for x; "
            "https://h.example/v1?api_key=abcdefgh12&model=m&max_tokens=4096&token=tok-12345678#top; "
            'json {"base":"https://u:p%40ss@h/v1","mail":"a@b.example"}; see https://h.example/a@b and bob@c.example')
    assert redact(text) == (
        "cannot reach http://[redacted]@127.0.0.1:9/v1 for x; "
        "https://h.example/v1?api_key=[redacted]&model=m&max_tokens=4096&token=[redacted]#top; "
        'json {"base":"https://[redacted]@h/v1","mail":"a@b.example"}; see https://h.example/a@b and bob@c.example')
    # A placeholder credential in a query (what local servers are given) stays, as it does in a keyword.
    assert redact("http://h/v1?api_key=x") == "http://h/v1?api_key=x"


def test_a_configured_url_makes_its_password_and_basic_auth_header_secrets(monkeypatch):
    config = {"api_base": f"http://bob:{PASSWORD}@127.0.0.1:8000/v1?access_token=qq-7777777"}
    assert {PASSWORD, f"bob:{PASSWORD}", BASIC, "qq-7777777"} <= secret_values(config)
    echoed = f"rejected {BASIC}; password {PASSWORD}; token qq-7777777"
    assert Redactor.of(config)(echoed) == f"rejected {PLACEHOLDER}; password {PLACEHOLDER}; token {PLACEHOLDER}"
    assert url_secrets("http://bob:p%40ssw0rd@h") >= {"p%40ssw0rd", "p@ssw0rd"}  # as written and as sent
    # A base URL in the environment (OPENAI_BASE_URL is not a credential's name) counts too.
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://bob:{PASSWORD}@127.0.0.1:8000/v1")
    assert redact(f"rejected {BASIC} and {PASSWORD}") == f"rejected {PLACEHOLDER} and {PLACEHOLDER}"


def test_redaction_time_grows_linearly_on_adversarial_text():
    def seconds(n):
        text = (("sk-" * n) + ("Bearer " + " " * n) + ("key_" + "-" * 7) * n + "://" + "a" * n + ("://a" * n)
                + "://" + "@" * n + "?" + "a" * n + "&a=" * n + "?token" * n + "?api_key=" + "v" * n)
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


def test_an_odd_key_echoed_by_a_transient_error_is_redacted_after_the_retries(api_base, envs):
    REQUESTS.clear()
    env = envs("mock", user="litellm:openai/busy",
                 user_kwargs={"api_base": api_base, "api_key": KEY, "backoff": 0.001, "max_retries": 2})
    *_, truncated, info = _play_one_user_turn(env)
    assert truncated and "after 3 tries" in info["user_error"] and REQUESTS["busy"] == 3
    assert KEY not in info["user_error"] and PLACEHOLDER in info["user_error"]


def test_environment_keys_are_redacted_even_when_not_configured(monkeypatch, envs):
    monkeypatch.setenv("ACME_API_KEY", "zz9PluralZAlpha")
    error = litellm.AuthenticationError("rejected key zz9PluralZAlpha", llm_provider="scripted", model="x")
    env = envs("mock", user=f"litellm:{script('echo-env', ['Hello.', error, 'never reached'])}")
    *_, truncated, info = _play_one_user_turn(env)
    assert truncated and "zz9PluralZAlpha" not in info["user_error"]
    assert POSITION["echo-env"] == 2  # the opening and one failed call: a permanent error is not retried


def test_unreachable_server_is_retried_once(capfd, envs):
    env = envs("mock", user="litellm:openai/x",
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


def test_check_models_passes_a_working_model_and_probes_only_when_asked(api_base, envs):
    REQUESTS.clear()
    envs("mock", user="litellm:openai/ok", user_kwargs={"api_base": api_base, "api_key": KEY})
    assert REQUESTS["ok"] == 0
    env = envs("mock", user="litellm:openai/ok", user_kwargs={"api_base": api_base, "api_key": KEY},
                 check_models=True)
    assert REQUESTS["ok"] == 1
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    assert obs[-1]["content"] == "OK" and REQUESTS["ok"] == 2
    envs("mock", user="scripted", check_models=True)  # nothing to probe


def test_a_recorded_user_replays_without_its_model(tmp_path, envs):
    with error_llm_server() as gone:
        kwargs = {"api_base": gone, "api_key": "x", "memo": str(tmp_path / "memo.sqlite")}
        envs("mock", user="litellm:openai/ok", user_kwargs=kwargs).reset(options={"task_id": "mock-cancel-card"})
    # The server has stopped: the probe is skipped and the opening replays from the memo.
    env = envs("mock", user="litellm:openai/ok", user_kwargs=kwargs, check_models=True)
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    assert obs[-1]["content"] == "OK" and "user_error" not in info
    with pytest.raises(UserModelError, match="cannot reach"):  # without the recording the probe does run
        envs("mock", user="litellm:openai/ok", user_kwargs={**kwargs, "memo": str(tmp_path / "new.sqlite")},
               check_models=True)


def test_check_models_probes_the_judge(api_base):
    with pytest.raises(JudgeModelError, match=r"^judge model: authentication failed .* judge_kwargs="):
        MuaEnv("mock", judge="litellm:openai/badkey", judge_kwargs={"api_base": api_base, "api_key": KEY},
               check_models=True)


# -- credentials in the api_base ---------------------------------------------------------------------------------
def _probe(role, model, api_base):
    kwargs = {"api_base": api_base, "api_key": "x"}
    if role == "agent":
        LiteLLMAgent(model, **kwargs).check()
    elif role == "judge":
        MuaEnv("mock", judge=f"litellm:{model}", judge_kwargs=kwargs, check_models=True)
    else:
        MuaEnv("mock", user=f"litellm:{model}", user_kwargs=kwargs, check_models=True)


@pytest.mark.parametrize("role, error", [("user", UserModelError), ("judge", JudgeModelError),
                                         ("agent", AgentModelError)])
def test_probe_errors_name_the_endpoint_without_its_credentials(api_base, role, error):
    with pytest.raises(error) as refused:
        _probe(role, "openai/x", with_userinfo(REFUSED))
    assert str(refused.value) == (f"{role} model: cannot reach http://[redacted]@127.0.0.1:9/v1 for openai/x: is the "
                                  "server running?")
    with pytest.raises(error) as missing:
        _probe(role, "openai/missing", with_userinfo(api_base))
    assert str(missing.value) == (f"{role} model: model 'openai/missing' not found at "
                                  f"{api_base.replace('http://', 'http://[redacted]@')}: check the model name")


def _echo_url_error(name, base):
    """A scripted model that fails as a provider echoing the endpoint and the basic-auth header it was sent."""
    error = litellm.AuthenticationError(f"rejected Basic {BASIC} at {base}", llm_provider="scripted", model=name)
    return script(name, ["Hello, I need help.", error] if name.startswith("user") else [error])


def test_episode_errors_carry_no_credential_from_the_api_base(api_base, envs):
    base = with_userinfo(REFUSED)
    env = envs("mock", user=f"litellm:{_echo_url_error('user-echo-url', base)}", user_kwargs={"api_base": base})
    *_, truncated, info = _play_one_user_turn(env)
    trajectory = env.unwrapped.trajectory().to_json_line()
    assert truncated and info["user_error"].endswith(f"rejected Basic {PLACEHOLDER} at http://[redacted]@127.0.0.1:9/v1")
    for secret in (PASSWORD, BASIC):
        assert secret not in info["user_error"] and secret not in trajectory

    reward, reward_info, trajectory = _judged(envs, LLMJudge(_echo_url_error("judge-echo-url", base), api_base=base))
    assert reward_info["judge_error"].endswith(f"rejected Basic {PLACEHOLDER} at http://[redacted]@127.0.0.1:9/v1")
    for secret in (PASSWORD, BASIC):
        assert secret not in reward_info["judge_error"] and secret not in trajectory

    # Over HTTP: the sync client sends bob:PASSWORD as basic auth, and the busy server echoes it (in base64).
    agent = LiteLLMAgent("openai/busy", api_base=with_userinfo(api_base), api_key="x", backoff=0.001, max_retries=0)
    agent.reset({"tools": []})
    with pytest.raises(AgentError) as caught:
        agent.act([{"role": "user", "content": "Hi"}])
    assert f"request from key {PLACEHOLDER}" in str(caught.value) and BASIC not in str(caught.value)


def test_the_async_client_refusing_user_info_with_a_key_is_not_retried(api_base, envs):
    REQUESTS.clear()
    kwargs = {"api_base": with_userinfo(api_base), "api_key": "x", "backoff": 1.0}
    env = envs("mock", user="litellm:openai/ok", user_kwargs=kwargs)
    start = time.perf_counter()
    *_, info = env.reset(options={"task_id": "mock-cancel-card"})
    assert "not retried" in info["user_error"] and time.perf_counter() - start < 1.0 and REQUESTS["ok"] == 0
    assert PASSWORD not in info["user_error"]


# -- the judge and the agent -------------------------------------------------------------------------------------
def _nl_task():
    return Task(id="nl", domain="mock", script=["Hi."],
                evaluation=EvaluationSpec(reward_basis=["NL_ASSERTION"], nl_assertions=["greets"]))


def _judged(envs, judge):
    env = envs("mock", judge=judge, user="scripted")
    env.reset(options={"task": _nl_task()})
    *_, reward, terminated, truncated, info = env.step("Hello!")
    assert terminated
    return reward, info["reward_info"], env.unwrapped.trajectory().to_json_line()


def test_judge_errors_carry_no_key(api_base, envs):
    reward, reward_info, trajectory = _judged(envs, LLMJudge("openai/badkey", api_base=api_base, api_key=KEY))
    error = reward_info["judge_error"]
    assert reward == 0.0 and error.startswith("JudgeError: judge model call failed (not retried: it cannot heal): "
                                              "AuthenticationError")
    assert KEY not in error and PLACEHOLDER in error and KEY not in trajectory


def test_a_busy_judge_is_retried_with_backoff_then_records_judge_error(api_base, envs):
    REQUESTS.clear()
    start = time.perf_counter()
    reward, reward_info, _ = _judged(envs, LLMJudge("openai/busy", api_base=api_base, api_key=KEY, backoff=0.05,
                                              max_retries=2))
    assert REQUESTS["busy"] == 3 and time.perf_counter() - start >= 0.05 + 0.1  # two backoffs were slept
    error = reward_info["judge_error"]
    assert reward == 0.0 and error.startswith("JudgeError: judge model call failed after 3 tries: "
                                              "ServiceUnavailableError") and KEY not in error


@pytest.mark.parametrize("failures", [1, 3])
def test_a_judge_that_fails_then_answers_succeeds(api_base, envs, failures):
    # Three failures outlast the provider client's default retries (two): only ours (three by default) heal them.
    REQUESTS.clear()
    model = f"openai/flaky-{failures}"
    reward, reward_info, _ = _judged(envs, LLMJudge(model, api_base=api_base, api_key="x", backoff=0.001))
    assert REQUESTS[model.removeprefix("openai/")] == failures + 1 and "judge_error" not in reward_info
    assert reward == 1.0


def test_a_judge_call_that_hangs_times_out_and_is_retried(envs):
    model = script("slow-judge", ['{"verdicts": [true]}'], delay=5.0)
    start = time.perf_counter()
    reward, reward_info, _ = _judged(envs, LLMJudge(model, timeout=0.2, max_retries=1, backoff=0.0))
    assert 0.4 <= time.perf_counter() - start < 2.0  # two tries cut off at 0.2 s each, not one 5 s wait
    assert reward == 0.0 and "after 2 tries: TimeoutError" in reward_info["judge_error"]


def test_the_agent_retries_what_can_heal_in_both_call_paths(api_base):
    REQUESTS.clear()
    agent = LiteLLMAgent("openai/flaky-1", api_base=api_base, api_key="x", backoff=0.001)
    agent.reset({"tools": []})
    action = agent.act([{"role": "user", "content": "Hi"}])
    assert REQUESTS["flaky-1"] == 2 and json.loads(action["content"])["verdicts"][0]["true"] is True
    busy = LiteLLMAgent("openai/busy", api_base=api_base, api_key=KEY, backoff=0.001, max_retries=1)
    busy.reset({"tools": []})
    with pytest.raises(AgentError, match=r"^agent model call failed after 2 tries: ServiceUnavailableError"):
        busy.act([{"role": "user", "content": "Hi"}])
    assert REQUESTS["busy"] == 2

    unavailable = litellm.ServiceUnavailableError("503", llm_provider="scripted", model="x")
    healing = LiteLLMAgent(script("agent-heals", [unavailable, "Hello."]), backoff=0.001)
    failing = LiteLLMAgent(script("agent-fails", [unavailable]), backoff=0.001, max_retries=2)

    async def both():
        healing.reset({"tools": []})
        failing.reset({"tools": []})
        action = await healing.aact([{"role": "user", "content": "Hi"}])
        with pytest.raises(AgentError, match=r"^agent model call failed after 3 tries: ServiceUnavailableError"):
            await failing.aact([{"role": "user", "content": "Hi"}])
        return action

    assert asyncio.run(both())["content"] == "Hello." and POSITION["agent-heals"] == 2
    assert POSITION["agent-fails"] == 3


def test_call_limits_are_ours_and_checked():
    request, limits = split_call_limits({"model": "m", "timeout": 5, "max_retries": 1, "backoff": 0.0})
    assert request == {"model": "m"} and limits == CallLimits(timeout=5, max_retries=1, backoff=0.0)
    assert split_call_limits({"model": "m"}) == ({"model": "m"}, CallLimits())
    for bad, message in (({"timeout": 0}, "timeout must be a number > 0, got 0"),
                         ({"max_retries": 1.5}, "max_retries must be a whole number >= 0, got 1.5"),
                         ({"backoff": -1}, "backoff must be a number >= 0, got -1"),
                         ({"max_retries": True}, "max_retries must be a whole number >= 0, got True")):
        for build in (lambda: LLMJudge("openai/x", **bad), lambda: LLMUser("openai/x", **bad),
                      lambda: split_call_limits(bad)):
            with pytest.raises(ValueError, match=f"^{message.replace('.', '[.]')}$"):
                build()


def test_one_line_is_shared_by_the_cli_and_the_model_errors():
    assert cli.one_line is one_line
    assert one_line(KeyError("no task 'x'\n(see mua-gym list)")) == "no task 'x' (see mua-gym list)"
    assert one_line(ValueError()) == "ValueError" and one_line("  a\n\t b  ") == "a b"
    assert one_line("x" * 400, 300) == "x" * 297 + "..." and len(one_line("x" * 400)) == 400


def test_agent_errors_carry_no_key(api_base):
    agent = LiteLLMAgent("openai/badkey", api_base=api_base, api_key=KEY)
    agent.reset({"tools": []})
    with pytest.raises(AgentError) as caught:
        agent.act([{"role": "user", "content": "Hi"}])
    assert "AuthenticationError" in str(caught.value) and KEY not in str(caught.value)
    assert KEY not in json.dumps(caught.value.args)


@pytest.mark.parametrize("name", ["api_key", "OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "Authorization",
                                  "x-api-key", "authToken", "client_secret", "db_password_prod", "apiKey", "Cookie"])
def test_credential_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["max_tokens", "max_new_tokens", "keyword", "top_k", "tokenizer", "monkey",
                                  "SSH_AUTH_SOCK", "api_key_env", "auth_url", "api_base", "PWD", "num_keys"])
def test_settings_that_mention_a_credential_word_are_not_secret(name):
    """A setting is written down and compared on resume; only a credential is masked."""
    assert not is_secret_name(name)
    assert masked({name: 4096}) == {name: 4096}
