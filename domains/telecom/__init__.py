"""Telecom: dual-control technical support. The agent acts on the carrier's account side; the simulated user
acts on their own phone. After every call from either side the phone's view of the account is re-derived.

World and task sources: ``generated`` (seeded worlds of our own and fault-injected troubleshooting tasks,
verified when made) and ``tau2`` (TAU2's telecom database, phone and tasks, read from the installed ``tau2``
package or ``path=``: the 114 base tasks as train/test, or all 2,285 with ``subset="full"``).
"""

from __future__ import annotations

from pathlib import Path
from sqlalchemy import Connection

from mua_gym.domain import tau2
from mua_gym.domain import Domain
from mua_gym.domains.telecom.taskgen import generated_tasks
from mua_gym.domains.telecom.account_format import load_account_db
from mua_gym.domains.telecom.account_tools import ACCOUNT_ASSERTIONS, ACCOUNT_SETUP_TOOLS, AGENT_TOOLS
from mua_gym.domains.telecom.phone import sync
from mua_gym.domains.telecom.phone_format import load_phone_db
from mua_gym.domains.telecom.phone_tools import PHONE_ASSERTIONS, PHONE_SETUP_TOOLS, USER_TOOLS
from mua_gym.domains.telecom.schema import Base
from mua_gym.domains.telecom.user_requests import VOCABULARY
from mua_gym.kit import deferred
from mua_gym.tools import Toolkit


def build_tau2(conn: Connection, *, seed: int = 0, path: str | None = None) -> None:
    """TAU2's telecom world: the account database (``db.toml``) and the user's phone (``user_db.toml``)."""
    import tomllib

    folder = tau2.data_dir("telecom", path)
    with open(folder / "db.toml", "rb") as fh:
        load_account_db(conn, tomllib.load(fh))
    with open(folder / "user_db.toml", "rb") as fh:
        load_phone_db(conn, tomllib.load(fh))


POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")


def tau2_policy(path: str | None) -> str:
    """TAU2's telecom policy as its agent reads it: the main policy and the technical-support manual."""
    main = tau2.read_policy("telecom", path, "main_policy.md")
    manual = tau2.read_policy("telecom", path, "tech_support_manual.md")
    return f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n</tech_support_policy>"


DOMAIN = Domain(
    name="telecom",
    metadata=Base.metadata,
    tools=AGENT_TOOLS,
    user_tools=USER_TOOLS,
    setup_tools=Toolkit.of(*ACCOUNT_SETUP_TOOLS, *PHONE_SETUP_TOOLS),
    policy=tau2.policy_function("telecom", POLICY, read=tau2_policy),
    worlds={"tau2": build_tau2, "generated": deferred("mua_gym.domains.telecom.generate:build_generated")},
    task_sources={"tau2": tau2.task_source("telecom", subsets=True), "generated": generated_tasks},
    terminal_tools=frozenset(),
    assertions={**ACCOUNT_ASSERTIONS, **PHONE_ASSERTIONS},
    after_tool_call=sync,
    reward_basis=("ENV_ASSERTION",),
    dual_control=True,
    user_vocabulary=VOCABULARY,  # the phone settings its customer understands in words
    memo=True,  # the phone's rows and the sync's look-ups are derived again on every call otherwise
    answer_vocabularies=(("pin", "puk"),),  # what a locked SIM is locked with: naming both answers nothing
    description="Mobile technical support: a carrier's accounts on one side, the customer's phone on the other.",
)
