"""Domain randomisation: seedable perturbations of what the agent sees, the tools it is offered, how calls
fail, and how the user behaves, for every domain, with the world and the reward kept true.

Off by default. Name them where an env is made (``make("mua/Retail-v0", perturb="typos+tool_faults:rate=0.3")``,
``mua-gym eval --perturb transition``); a family's name (``observation``, ``action``, ``transition``, ``user``)
means each of its perturbations with its defaults:

==================  =====================  ===========================================================
family              name                   what it does (options)
==================  =====================  ===========================================================
observation         ``typos``              misspelt and recased ordinary user words (rate, casing)
observation         ``paraphrase``         user turns said otherwise, from templates (rate, fillers)
observation         ``result_fields``      tool results' keys reordered and renamed (reorder, rename)
action              ``distractor_tools``   near copies of real tools, refused when called (count)
action              ``tool_descriptions``  reworded or swapped tool descriptions (paraphrase, misleading)
action              ``cost_notes``         made-up cost and latency notes on tools (rate)
transition          ``tool_faults``        calls failing without running: timeouts, 429, 503, ... (rate, kinds)
user                ``persona``            impatient, vague or mind-changing users (kinds, rate)
==================  =====================  ===========================================================

Each draws its parameters per episode from the episode's seed: the same seed gives the same perturbations,
bit for bit. ``:static=N`` after a name or a family (``"action:static=0"``) draws from ``N`` in every episode
instead: the same variant throughout, as static-perturbation training wants and as TRL's fixed tools need.
``info["perturbations"]`` (at reset) and the trajectory's ``perturbations`` record what was drawn; a step's
``info["perturbation_events"]`` and the trajectory record what was done (a fault injected, a distractor refused).
See :mod:`mua_gym.perturbations.base` for writing one.
"""

from mua_gym.perturbations.actions import CostNotes, DistractorTools, ToolDescriptions
from mua_gym.perturbations.base import (
    FAMILIES, Call, EpisodeFacts, Family, Perturbation, Perturbations, check_perturb_specs, made_static,
    make_perturbations, perturbation_names, register_perturbation,
)
from mua_gym.perturbations.observations import Paraphrase, ResultFields, Typos
from mua_gym.perturbations.transitions import FAULTS, ToolFaults
from mua_gym.perturbations.users import PERSONAS, OffScriptPersona

__all__ = [
    "FAMILIES", "FAULTS", "PERSONAS", "Call", "CostNotes", "DistractorTools", "EpisodeFacts", "Family",
    "OffScriptPersona", "Paraphrase", "Perturbation", "Perturbations", "ResultFields", "ToolDescriptions",
    "ToolFaults", "Typos", "check_perturb_specs", "made_static", "make_perturbations", "perturbation_names",
    "register_perturbation",
]
