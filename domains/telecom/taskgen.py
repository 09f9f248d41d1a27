"""Unlimited telecom troubleshooting tasks on generated worlds: break a customer's phone and account, then judge
whether the agent (acting on the account) and the user (acting on the phone, as the agent tells them) fix it.

A task picks a customer, one of their active phone lines, a **family** (what the customer complains about) and
a set of **faults** that explain it, one per slot (airplane mode, SIM, APN, suspension, roaming, mobile data,
Data Saver, network mode, VPN, Wi-Fi Calling, app permissions, data usage). Families:

=====================  ======================================================  ==============================
family                 faults (the first group: at least one of them)          judged by (env assertions)
=====================  ======================================================  ==============================
no_service             airplane, SIM out, broken APN; + unpaid-bill suspension service connected
suspended_unpaid_bill  unpaid-bill suspension; + airplane, SIM out, broken APN  service connected, bill paid,
                                                                               line active
no_mobile_data         mobile data off; + airplane, SIM out, broken APN, Data   mobile data works, speed
                       Saver, 2G/3G mode, poor VPN, roaming, data used up       >= 200 Mbps (excellent)
slow_data              Data Saver, 2G/3G mode, poor VPN                         the same
abroad_no_roaming      abroad with roaming off on the phone, the line or both;  the same
                       + airplane, data off, Data Saver, 2G/3G, VPN, data used
data_exhausted         data used up (the customer asks for 1-2 GB); + airplane, the same + the refuelled amount
                       data off, Data Saver, 2G/3G, VPN, roaming
no_mms                 no MMSC URL, Wi-Fi Calling MMS, messaging permissions,  can send MMS
                       2G mode; + airplane, SIM out, data off, roaming, data
=====================  ======================================================  ==============================

A fault is injected by the domain's setup helpers (task initial actions with requestor ``setup``, the first
always ``set_user_info`` for the chosen line), and fixed by gold actions of both sides: the user's
(``toggle_airplane_mode``, ``reseat_sim_card``, ``reset_apn_settings`` + ``reboot_device``, ...) and the agent's
(``enable_roaming``, ``refuel_data``, ``send_payment_request`` + ``resume_line``, ...), with the look-ups and
phone checks a careful agent makes on the way. Every task but a trap is judged by the whole final world against
the gold one (``DB``: a write nobody asked for, a data top-up or roaming turned on, fails it); every task by env
assertions (``ENV_ASSERTION``) and by the look-ups the policy makes the agent's first step (``ACTION``:
``get_customer_by_phone`` with the number the customer gives, ``get_details_by_id`` on that number's line): a
phone fixed without them, say by a script that asks for every fix in turn without diagnosing anything, earns
nothing. The **traps**: a SIM locked with a PIN or PUK code, or a line suspended after its contract ended, which
no tool may fix; the right answer adds ``transfer_to_human_agents`` (``ACTION`` with ``compare_args=[]``), and the
service must still be down at the end.

``difficulty`` 1-3 is the number of faults; at 3, one task in three swaps a fault for a trap. Personas differ in
skill and manner (a confident user, an everyday one, a novice who says little, a hurried one). Splits are
disjoint by customer. Every task is verified when it is made (gold calls succeed, gold replay scores 1.0,
doing nothing 0.0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from mua_gym.domain import Domain
from mua_gym.domains.telecom.account_records import ACCOUNT_DB
from mua_gym.domains.telecom.account_tools import end_of_last_month
from mua_gym.task import Action, EnvAssertion, EvaluationSpec, Persona, Task, UserScenario, WorldSpec
from mua_gym.kit.maker import TaskMaker, generated_world, read_world
from mua_gym.kit.generation import generate_tasks
from mua_gym.kit.sampling import weighted_index
from mua_gym.world import World

__all__ = ["DEFAULT_COUNTS", "FAMILIES", "generated_tasks"]

DEFAULT_COUNTS = {"train": 1000, "dev": 150, "test": 150}
#: Fault slots in the order their faults are injected and fixed (airplane mode before the VPN: switching
#: airplane mode on drops a VPN connection).
SLOTS = ("airplane", "sim", "apn", "suspension", "roaming", "data_off", "saver", "pref", "vpn", "wifi_calling",
         "permission", "usage")
#: Slot variants no tool may fix (the agent must transfer).
TRAPS = {"sim": ("pin", "puk"), "suspension": ("contract_end",)}
GOAL_ASSERTIONS = {
    "service": [("assert_service_status", {"expected_status": "connected"})],
    "data": [("assert_mobile_data_status", {"expected_status": True}),
             ("assert_internet_speed", {"expected_speed": 200.0, "expected_desc": "excellent"})],
    "mms": [("assert_can_send_mms", {"expected_status": True})],
}


@dataclass(frozen=True)
class Family:
    goal: str  # service | data | mms
    core: dict[str, tuple[str, ...]]  # slot -> variants; a task has at least one of these
    extra: dict[str, tuple[str, ...]]  # further faults that also break the goal
    symptoms: tuple[str, ...]


_SERVICE_FAULTS = {"airplane": ("on",), "sim": ("unseated",), "apn": ("broken",)}
_SPEED_FAULTS = {"saver": ("on",), "pref": ("2g_only", "3g_only"), "vpn": ("poor",)}
_ROAMING = {"roaming": ("phone_off", "line_off", "both_off")}
FAMILIES: dict[str, Family] = {
    "no_service": Family("service", _SERVICE_FAULTS, {**_SERVICE_FAULTS, "suspension": ("overdue",)}, (
        "My phone has no signal at all; I can't make calls or send texts.",
        "Since this morning my phone says there's no service, and my calls don't go through.",
        "I can't get any cellular service on my phone anymore.",
    )),
    "suspended_unpaid_bill": Family("service", {"suspension": ("overdue",)}, _SERVICE_FAULTS, (
        "My phone lost service, and I think it's because of a bill I forgot to pay. I'd like to pay it and get "
        "my line working again.",
        "I got a message that my line was suspended for an unpaid bill and now I have no service. I want to "
        "settle the bill and have my service back.",
    )),
    "no_mobile_data": Family("data", {"data_off": ("off",)}, {
        **_SERVICE_FAULTS, **_SPEED_FAULTS, **_ROAMING, "usage": ("exceeded",)}, (
        "Mobile data isn't working on my phone; nothing loads unless I'm on Wi-Fi.",
        "My phone won't connect to the internet over the cellular network.",
        "Apps and websites don't load on my phone when I'm away from Wi-Fi.",
    )),
    "slow_data": Family("data", _SPEED_FAULTS, _SPEED_FAULTS, (
        "My mobile internet is painfully slow; pages take forever to load.",
        "Data on my phone has become really slow. Videos won't play at all.",
        "My phone's internet speed is terrible lately, even with full bars.",
    )),
    "abroad_no_roaming": Family("data", _ROAMING, {
        "airplane": ("on",), "data_off": ("off",), **_SPEED_FAULTS, "usage": ("exceeded",)}, (
        "I'm travelling abroad and my mobile data doesn't work here.",
        "I just landed abroad and I can't get any mobile data on my phone.",
    )),
    "data_exhausted": Family("data", {"usage": ("exceeded",)}, {
        "airplane": ("on",), "data_off": ("off",), **_SPEED_FAULTS, **_ROAMING}, (
        "My mobile data stopped working, and I think I've used up my monthly allowance.",
        "I ran out of data this month and my phone can't get online anymore.",
    )),
    "no_mms": Family("mms", {"apn": ("no_mmsc",), "wifi_calling": ("mms_over_wifi",),
                             "permission": ("sms", "storage", "both"), "pref": ("2g_only",)}, {
        "airplane": ("on",), "sim": ("unseated",), "data_off": ("off",), **_ROAMING, "usage": ("exceeded",),
        "apn": ("no_mmsc", "broken"), "wifi_calling": ("mms_over_wifi",), "permission": ("sms", "storage", "both"),
        "pref": ("2g_only",)}, (
        "I can't send picture messages from my phone; normal texts work but photos fail to send.",
        "Group messages and photos won't send from my messaging app.",
        "Every time I try to send an MMS, it fails.",
    )),
}
FAMILY_NAMES = tuple(FAMILIES)
#: Words that name the agent's account fix of a fault slot in a plan it asks the customer to agree to.
PLAN_TERMS = {"roaming": ("roaming",), "usage": ("refuel", "top up", "gb of data"),
              "suspension": ("payment request", "bill", "resume")}
COUNTRIES = ("Portugal", "Japan", "Canada", "Morocco", "Norway", "Chile", "Vietnam", "Greece", "Mexico", "Kenya")
REFUEL_AMOUNTS = (0.5, 1.0, 1.5, 2.0)
#: The policy's cap on a line's top-ups in one billing cycle, earlier ones included.
REFUEL_CAP_GB = 2.0
PERSONAS: dict[str, dict[str, Any]] = {
    "confident": dict(disclosure="forthcoming", patience=25, verbosity="terse", tone="matter-of-fact",
                      description="A confident, tech-savvy customer who knows the phone's settings well and carries "
                                  "out each instruction quickly and exactly."),
    "everyday": dict(disclosure="normal", patience=18, verbosity="normal", tone="polite",
                     description="An everyday smartphone user, comfortable with the basics, who follows clear "
                                 "instructions."),
    "novice": dict(disclosure="minimal", patience=12, verbosity="chatty", tone="anxious",
                   description="A customer who is not at ease with technology: unsure where settings are, needs "
                               "every step spelled out, and volunteers little unless asked.",
                   hidden_constraints=["You do not know technical terms such as APN, VPN or roaming; describe only "
                                       "what you see on the screen."]),
    "hurried": dict(disclosure="normal", patience=10, verbosity="terse", tone="impatient",
                    description="A busy customer, short on time, who wants the problem fixed fast.",
                    hidden_constraints=["You are in a hurry and want short answers."]),
}
PERSONA_NAMES = tuple(PERSONAS)
PERSONA_WEIGHTS = (0.3, 0.35, 0.2, 0.15)
OPENERS = {"confident": "", "everyday": "", "novice": "I'm sorry, I'm not very good with phones. ",
           "hurried": "I'm in a rush, so let's be quick. "}


class Snapshot:
    """The generated world's account side as plain Python data, read once per world (through the records'
    declaration)."""

    LINE_FIELDS = ("line_id", "phone_number", "status", "plan_id", "device_id", "data_used_gb", "data_refueling_gb",
                   "roaming_enabled")

    def __init__(self, world: World) -> None:
        db = ACCOUNT_DB.export(world)
        self.plans = {p["plan_id"]: {"limit": p["data_limit_gb"], "price": p["price_per_month"],
                                     "refuel": p["data_refueling_price_per_gb"]} for p in db["plans"]}
        self.customers = [{"customer_id": c["customer_id"], "name": c["full_name"], "status": c["account_status"]}
                          for c in db["customers"]]
        devices = {d["device_id"]: d["device_type"] for d in db["devices"]}
        lines = {ln["line_id"]: ln for ln in db["lines"]}
        self.lines = {c["customer_id"]: [{**{k: lines[lid][k] for k in self.LINE_FIELDS},
                                          "device_type": devices.get(lines[lid]["device_id"])}
                                         for lid in c["line_ids"]] for c in db["customers"]}
        self.bill_statuses: dict[str, set[str]] = {}
        for bill in db["bills"]:
            self.bill_statuses.setdefault(bill["customer_id"], set()).add(bill["status"])
        self.bill_ids = {bill["bill_id"] for bill in db["bills"]}


def _a(tool_name: str, requestor: str = "assistant", /, **arguments: Any) -> Action:
    return Action(name=tool_name, arguments=arguments, requestor=requestor)  # type: ignore[arg-type]


def _u(tool_name: str, /, **arguments: Any) -> Action:
    return _a(tool_name, "user", **arguments)


def _s(tool_name: str, /, **arguments: Any) -> Action:
    return _a(tool_name, "setup", **arguments)


@dataclass(frozen=True)
class Choice:
    """What one task is about, as drawn: the customer and their phone line, the family and its faults (slot ->
    variant, in :data:`SLOTS` order), the trap's slot, the persona, and what the faults need (the country abroad,
    the data top-up, the unpaid bill's id)."""

    customer_id: str
    name: str
    line: dict[str, Any]
    family_name: str
    faults: dict[str, str]
    trap_slot: str | None
    persona_name: str
    country: str | None
    refuel_gb: float | None
    bill_id: str | None

    @property
    def line_id(self) -> str:
        return self.line["line_id"]

    @property
    def number(self) -> str:
        return self.line["phone_number"]

    @property
    def family(self) -> Family:
        return FAMILIES[self.family_name]

    @property
    def faults_text(self) -> str:
        return "|".join(f"{s}:{v}" for s, v in self.faults.items())


class _Maker(TaskMaker):
    """Builds one task for a customer from a seeded generator."""

    def __init__(self, snap: Snapshot, rng: np.random.Generator, split: str, world: WorldSpec) -> None:
        super().__init__(rng)
        self.snap, self.split, self.world = snap, split, world

    def choose_faults(self, family: Family, level: int) -> tuple[dict[str, str], str | None] | None:
        """slot -> variant of the fixable faults, and the trap's slot (or None)."""
        trap_slot = None
        if level == 3 and self.rng.random() < 1 / 3:
            options = ["sim"] + (["suspension"] if family.goal == "service" else [])
            trap_slot = self.pick(options)
        fixable = level - (trap_slot is not None)
        faults: dict[str, str] = {}
        core = [s for s in family.core if s != trap_slot]
        if core:
            slot = self.pick(core)
            faults[slot] = self.pick(family.core[slot])
        while len(faults) < fixable:
            free = [s for s in family.extra if s not in faults and s != trap_slot]
            if not free:
                return None
            slot = self.pick(free)
            faults[slot] = self.pick(family.extra[slot])
        if trap_slot is not None:
            faults[trap_slot] = self.pick(TRAPS[trap_slot])
        return {s: faults[s] for s in SLOTS if s in faults}, trap_slot

    def fresh_bill_id(self) -> str:
        """A bill id the world does not have yet (for the bill a suspension leaves unpaid)."""
        return self.unused(lambda: f"B{int(self.rng.integers(1_000_000, 10_000_000))}", self.snap.bill_ids)

    def choose_line(self, customer: dict) -> dict[str, Any] | None:
        """One of an active customer's active phone lines, or None where they have none."""
        if customer["status"] != "Active":
            return None
        candidates = [ln for ln in self.snap.lines.get(customer["customer_id"], [])
                      if ln["status"] == "Active" and ln["device_type"] == "phone"]
        return self.pick(candidates) if candidates else None

    def choose_persona(self) -> str:
        """A persona's name, drawn by :data:`PERSONA_WEIGHTS`."""
        return PERSONA_NAMES[weighted_index(self.rng, PERSONA_WEIGHTS)]

    def choose(self, customer: dict, level: int) -> Choice | None:
        """What the task is about (the draws in their fixed order), or None where this customer cannot have it."""
        cid = customer["customer_id"]
        line = self.choose_line(customer)
        if line is None:
            return None
        family_name = self.pick(FAMILY_NAMES)
        billable = not {"Overdue", "Awaiting Payment"} & self.snap.bill_statuses.get(cid, set())
        chosen = self.choose_faults(FAMILIES[family_name], level)
        if chosen is None:
            return None
        faults, trap_slot = chosen
        if "suspension" in faults and not billable:  # the setup helper and the payment request need a clean slate
            return None
        persona_name = self.choose_persona()
        country = self.pick(COUNTRIES) if "roaming" in faults else None
        refuel_gb = None
        if "usage" in faults:
            allowed = [a for a in REFUEL_AMOUNTS if line["data_refueling_gb"] + a <= REFUEL_CAP_GB + 1e-9]
            if not allowed:  # the line is at the cap: no refuel the policy allows could fix it
                return None
            refuel_gb = self.pick(allowed)
        bill_id = self.fresh_bill_id() if "suspension" in faults else None
        return Choice(customer_id=cid, name=customer["name"], line=line, family_name=family_name, faults=faults,
                      trap_slot=trap_slot, persona_name=persona_name, country=country, refuel_gb=refuel_gb,
                      bill_id=bill_id)

    def make(self, customer: dict, level: int, task_id: str) -> Task | None:
        """The task ``task_id`` for ``customer`` at ``level``, or None where this customer cannot have one."""
        choice = self.choose(customer, level)
        if choice is None:
            return None
        script = _script(choice, self.snap.plans[choice.line["plan_id"]], self.rng)
        ending = _ending(choice, script)
        symptom = self.pick(choice.family.symptoms)  # drawn after the faults' own draws
        says = (f"{OPENERS[choice.persona_name]}{symptom} My phone number is {choice.number}. If it can't be fixed "
                f"here, tell me exactly why, with any date that matters.")
        trap_slot = choice.trap_slot
        return Task(
            id=task_id, domain="telecom", split=self.split, category=choice.family_name, difficulty=level,  # type: ignore[arg-type]
            description=f"{choice.family_name}: {choice.faults_text}" + (f" (trap: {trap_slot})" if trap_slot else ""),
            world=self.world,
            user_scenario=_scenario(choice, symptom, says, ending.gold),
            script=[f"Hi! {says}", "Okay, I'll do that on my phone.", "Yes, please go ahead.", "Thank you."],
            initial_actions=script.setup,
            gold_actions=ending.gold,
            evaluation=_evaluation(choice, script, ending),
        )


@dataclass
class Fix:
    """What one fault adds to a task: the setup that injects it, the gold actions that fix it, the checks a trap's
    gold makes before its hand-off, and env assertions beyond the family's goal."""

    setup: list[Action]
    gold: list[Action] = field(default_factory=list)
    trap_checks: list[Action] = field(default_factory=list)
    assertions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Script:
    """A task's actions before its ending: the policy's first look-ups, the setup, the gold so far (look-ups, a
    first phone check, every fault's fix), and what the faults add for a trap's gold and the env assertions."""

    lookups: list[Action]
    setup: list[Action]
    gold: list[Action]
    trap_checks: list[Action] = field(default_factory=list)
    assertions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _script(c: Choice, plan: dict[str, float], rng: np.random.Generator) -> Script:
    """The setup that injects ``c``'s faults and the gold that fixes them, fault by fault in :data:`SLOTS` order."""
    # The policy's first step: the customer's record, then the line the call is about (ACTION-judged).
    lookups = [_a("get_customer_by_phone", phone_number=c.number), _a("get_details_by_id", id=c.line_id)]
    first_check = _u("can_send_mms") if c.family.goal == "mms" else _u("check_network_status")
    script = Script(lookups, [_s("set_user_info", name=c.name, phone_number=c.number)], lookups + [first_check])
    for slot, variant in c.faults.items():
        fix = FIXES[slot](c, variant, plan, rng)
        script.setup += fix.setup
        script.gold += fix.gold
        script.trap_checks += fix.trap_checks
        script.assertions += fix.assertions
    return script


def _airplane(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """Airplane mode on; the user switches it off."""
    return Fix([_s("turn_airplane_mode_on")], [_u("toggle_airplane_mode")])


def _sim(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """The SIM unseated (the user reseats it), or locked with a PIN or PUK (a trap: the user only checks it)."""
    if variant == "unseated":
        return Fix([_s("unseat_sim_card")], [_u("check_sim_status"), _u("reseat_sim_card")])
    return Fix([_s("lock_sim_card", mode=variant)], trap_checks=[_u("check_sim_status")])


def _apn(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """The APN broken or without its MMSC URL; the user resets it and reboots."""
    return Fix([_s("break_apn_settings" if variant == "broken" else "break_apn_mms_setting")],
               [_u("check_apn_settings"), _u("reset_apn_settings"), _u("reboot_device")])


def _suspension(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """The line suspended for an unpaid bill (the agent requests the payment, the user pays, the agent resumes the
    line), or after its contract ended (a trap: the agent only looks)."""
    cid, lid, bill_id = c.customer_id, c.line_id, c.bill_id
    setup = [_s("suspend_line_for_overdue_bill", customer_id=cid, line_id=lid, new_bill_id=bill_id,
                contract_ended=variant == "contract_end"),
             _s("simulate_network_search")]
    if variant == "contract_end":
        return Fix(setup, trap_checks=[_a("get_details_by_id", id=lid)])
    gold = [_a("get_details_by_id", id=lid), _a("get_bills_for_customer", customer_id=cid),
            _a("send_payment_request", customer_id=cid, bill_id=bill_id),
            _u("check_payment_request"), _u("make_payment"), _a("get_details_by_id", id=bill_id),
            _a("resume_line", customer_id=cid, line_id=lid), _u("reboot_device")]
    return Fix(setup, gold, assertions=[
        ("assert_no_overdue_bill", {"overdue_bill_id": bill_id}),
        ("assert_line_status", {"customer_id": cid, "line_id": lid, "expected_status": "Active"})])


def _roaming(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """Abroad with roaming off on the phone (the user turns it on), the line (the agent enables it) or both."""
    cid, lid = c.customer_id, c.line_id
    setup = [_s("set_user_location", abroad=True)]
    if variant == "phone_off":
        setup += [_s("turn_roaming_off"), _s("enable_roaming", customer_id=cid, line_id=lid)]
        return Fix(setup, [_a("get_details_by_id", id=lid), _u("toggle_roaming")])
    setup += [_s("turn_roaming_on" if variant == "line_off" else "turn_roaming_off"),
              _s("disable_roaming", customer_id=cid, line_id=lid), _s("simulate_network_search")]
    gold = [_a("get_details_by_id", id=lid), _a("enable_roaming", customer_id=cid, line_id=lid)]
    if variant == "both_off":
        gold.append(_u("toggle_roaming"))
    return Fix(setup, gold)


def _data_off(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """Mobile data off; the user turns it on."""
    return Fix([_s("turn_data_off")], [_u("toggle_data")])


def _saver(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """Data Saver on; the user turns it off."""
    return Fix([_s("turn_data_saver_mode_on")], [_u("check_data_restriction_status"), _u("toggle_data_saver_mode")])


def _pref(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """The network mode set to 2G or 3G only; the user sets 4G/5G preferred."""
    return Fix([_s("set_network_mode_preference", mode=variant)],
               [_u("check_network_mode_preference"), _u("set_network_mode_preference", mode="4g_5g_preferred")])


def _vpn(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """A poor VPN connected; the user disconnects it."""
    return Fix([_s("break_vpn")], [_u("check_vpn_status"), _u("disconnect_vpn")])


def _wifi_calling(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """Wi-Fi Calling on with MMS over Wi-Fi; the user turns Wi-Fi Calling off."""
    return Fix([_s("set_wifi_calling", enabled=True, mms_over_wifi=True)],
               [_u("check_wifi_calling_status"), _u("toggle_wifi_calling")])


def _permission(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """The messaging app without its SMS or storage permission, or both; the user grants them."""
    wanted = ("sms", "storage") if variant == "both" else (variant,)
    return Fix([_s("remove_app_permission", app_name="messaging", permission=p) for p in wanted],
               [_u("check_app_permissions", app_name="messaging")]
               + [_u("grant_app_permission", app_name="messaging", permission=p) for p in wanted])


def _usage(c: Choice, variant: str, plan: dict[str, float], rng: np.random.Generator) -> Fix:
    """The line's data used up; the agent checks the usage and refuels the amount the customer asks for."""
    cid, lid, refuel_gb, line = c.customer_id, c.line_id, c.refuel_gb, c.line
    assert refuel_gb is not None
    # Just over the allowance, by less than the refuel: the customer's refuel brings data back.
    over = round(float(rng.uniform(0.1, refuel_gb - 0.1)), 1)
    used = round(plan["limit"] + line["data_refueling_gb"] + over, 1)
    return Fix([_s("set_data_usage", customer_id=cid, line_id=lid, data_used_gb=used)],
               [_a("get_data_usage", customer_id=cid, line_id=lid),
                _a("refuel_data", customer_id=cid, line_id=lid, gb_amount=refuel_gb)],
               assertions=[("assert_data_refueling_amount", {
                   "customer_id": cid, "line_id": lid, "expected_amount": line["data_refueling_gb"] + refuel_gb})])


#: Per fault slot, what its fault adds to a task (every slot of :data:`SLOTS`).
FIXES: dict[str, Callable[[Choice, str, dict[str, float], np.random.Generator], Fix]] = {
    "airplane": _airplane, "sim": _sim, "apn": _apn, "suspension": _suspension, "roaming": _roaming,
    "data_off": _data_off, "saver": _saver, "pref": _pref, "vpn": _vpn, "wifi_calling": _wifi_calling,
    "permission": _permission, "usage": _usage,
}


@dataclass(frozen=True)
class Ending:
    """How a task ends: the whole gold (repeated reads left out), the hand-off of a trap (or None), what the agent
    must tell of a trap, and the env assertions on the final world."""

    gold: list[Action]
    transfer: Action | None
    reason: list[str]
    assertions: list[tuple[str, dict[str, Any]]]


def _ending(c: Choice, script: Script) -> Ending:
    """A trap's ending (the checks, the hand-off, the service still down) or a fixed phone's (the last check)."""
    cid, lid, trap_slot = c.customer_id, c.line_id, c.trap_slot
    if trap_slot is None:
        last_check = {"service": _u("check_status_bar"), "data": _u("run_speed_test"),
                      "mms": _u("can_send_mms")}[c.family.goal]
        return Ending(_without_repeated_reads(script.gold + [last_check]), None, [],
                      GOAL_ASSERTIONS[c.family.goal] + script.assertions)
    why = ("the SIM card is locked with a PIN/PUK code" if trap_slot == "sim"
           else "the line is suspended and its contract has ended")
    transfer = _a("transfer_to_human_agents", summary=f"Customer {cid}, line {lid}: {why}.")
    transfer.compare_args = []  # any summary will do
    # What the agent must tell of a trap: the fact that makes it one.
    reason = [c.faults["sim"]] if trap_slot == "sim" else [str(end_of_last_month())]
    assertions: list[tuple[str, dict[str, Any]]] = [("assert_service_status", {"expected_status": "no_service"})]
    if trap_slot == "suspension":
        assertions.append(("assert_line_status", {"customer_id": cid, "line_id": lid,
                                                  "expected_status": "Suspended"}))
    return Ending(_without_repeated_reads(script.gold + script.trap_checks + [transfer]), transfer, reason,
                  assertions)


def _location(c: Choice) -> str:
    """Where the customer is, in the user's words."""
    return f"You are travelling abroad, in {c.country}." if c.country else "You are at home."


def _scenario(c: Choice, symptom: str, says: str, gold: list[Action]) -> UserScenario:
    """The customer: what they say, who they are, how they behave.

    The opening names the symptom only: where the customer is and how much data they want are told when the agent
    asks, so an opening never names the account fix (roaming abroad, a top-up) for a script to make without a
    diagnosis."""
    where = f" I'm in {c.country} at the moment." if c.country else ""
    refuel = f" I'd like to add {_gb(c.refuel_gb)} GB of data." if c.refuel_gb is not None else ""
    turns = sum(a.requestor == "user" for a in gold) + 2 + any(
        a.requestor == "assistant" and a.name in WRITES for a in gold)
    spec = PERSONAS[c.persona_name]
    return UserScenario(
        instructions=" ".join(_instructions(c, symptom).split()),
        reason_for_call=symptom + where + refuel,
        known_info=f"You are {c.name}, and your phone number is {c.number}. {_location(c)}",
        unknown_info="You do not know what is causing the problem.",
        persona=Persona(**{**spec, "patience": max(spec["patience"], turns + 2)}),
        facts={"name": c.name, "phone_number": c.number, "customer_id": c.customer_id, "line_id": c.line_id,
               "location": c.country or "home", "persona": c.persona_name, "family": c.family_name,
               "faults": c.faults_text, "trap": c.trap_slot},
        intents=[_intent(c, says)],
    )


def _instructions(c: Choice, symptom: str) -> str:
    """The user simulator's instructions: who the customer is, where, what they want, and how to behave."""
    wishes = []
    if c.refuel_gb is not None:
        wishes.append(f"If the agent offers more data, you want {_gb(c.refuel_gb)} GB and accept its price.")
    if "suspension" in c.faults:
        wishes.append("If the agent sends you a payment request, check it on your phone and pay it.")
    return (
        f"You are {c.name}, a customer of the phone carrier, calling about your phone. In your own words: "
        f"\"{symptom}\" {_location(c)} {' '.join(wishes)} Do things on your phone only when the agent asks you to, "
        "and tell the agent what you see. Do not guess at fixes yourself. If the agent says it must transfer you "
        "to a human agent, accept that. When your problem is solved, thank the agent and end the call.")


def _intent(c: Choice, says: str) -> dict[str, Any]:
    """The scenario user's intent: the family, the opening, the faults, and what a plan for an account fix names."""
    intent: dict[str, Any] = {"category": c.family_name, "says": says, "faults": c.faults_text}
    # What a plan for an account fix names, so the scenario user can tell a stated plan from a bare "shall I?".
    terms = _plan_terms(c.faults)
    if terms:
        intent["plan_terms"] = terms
    if c.refuel_gb is not None:
        intent["refuel_gb"] = c.refuel_gb
    return intent


def _evaluation(c: Choice, script: Script, ending: Ending) -> EvaluationSpec:
    """How the task is judged: the whole world (but for a trap), the env assertions, the first look-ups, the
    diagnosing reads before an account fix and a trap's hand-off; a trap also on the reason told."""
    # The agent's own account reads before its fixes (usage before a top-up, bills before a payment request) are
    # judged too: a fix made without them is a guess.
    diagnosis = [a for a in ending.gold if a.requestor == "assistant" and a.name in DIAGNOSTIC_READS]
    return EvaluationSpec(
        # A trap is judged on the hand-off, the reason told and the service still down, not on which phone faults
        # got fixed first.
        reward_basis=["ENV_ASSERTION", "ACTION", "COMMUNICATE"] if c.trap_slot else ["DB", "ENV_ASSERTION", "ACTION"],
        actions=([ending.transfer] if ending.transfer is not None else []) + script.lookups + diagnosis,
        communicate_info=ending.reason,
        env_assertions=[EnvAssertion(name=n, arguments=a) for n, a in ending.assertions])


#: The agent's account reads that diagnose before an account fix.
DIAGNOSTIC_READS = frozenset({"get_data_usage", "get_bills_for_customer"})
WRITES = frozenset({"send_payment_request", "resume_line", "enable_roaming", "disable_roaming", "refuel_data",
                    "suspend_line"})
#: Look-ups a task needs once: a second identical one (e.g. the line's details for two faults) is left out.
READS = frozenset({"get_customer_by_phone", "get_details_by_id", "get_bills_for_customer", "get_data_usage",
                   "check_network_status", "check_sim_status", "check_apn_settings", "check_app_permissions"})


def _without_repeated_reads(gold: list[Action]) -> list[Action]:
    seen: set[str] = set()
    out = []
    for action in gold:
        if action.name in READS:
            key = action.model_dump_json()
            if key in seen:
                continue
            seen.add(key)
        out.append(action)
    return out


def _plan_terms(faults: dict[str, str]) -> list[str]:
    """The words a plan names for the account fixes of ``faults`` (slot -> variant): see :data:`PLAN_TERMS`."""
    fixed_on_account = {"roaming": ("line_off", "both_off"), "usage": ("exceeded",), "suspension": ("overdue",)}
    return [term for slot, variants in fixed_on_account.items() if faults.get(slot) in variants
            for term in PLAN_TERMS[slot]]


def _gb(amount: float | None) -> str:
    return f"{amount:g}"


def generated_tasks(domain: Domain, split: str, *, count: int | None = None, seed: int = 0, size: str = "default",
                    difficulty: int | None = None, verify: bool = True) -> list[Task]:
    """``count`` verified tasks of ``split`` (default 1,000 train, 150 dev, 150 test) over the world of ``seed``."""
    world = generated_world(seed, size)
    snap = read_world(domain, world, Snapshot)

    def make(rng: np.random.Generator, user: int, level: int, task_id: str) -> Task | None:
        return _Maker(snap, rng, split, world).make(snap.customers[user], level, task_id)

    wanted = DEFAULT_COUNTS[split] if count is None else count
    return generate_tasks(domain, split, n_users=len(snap.customers), count=wanted, seed=seed, difficulty=difficulty,
                          make=make, verify=verify)
