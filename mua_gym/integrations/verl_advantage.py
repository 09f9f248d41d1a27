"""verl plugin: the ``mua_grpo`` advantage estimator, GRPO whose group statistics leave void samples out.

A void sample (:mod:`mua_gym.integrations.verl`: its user failed or broke its scenario) has no token the model
wrote: its ``response_mask`` is all 0. verl's own GRPO still counts its 0.0 reward in its group's mean and
standard deviation, so a void episode moves the advantages of the real ones. ``mua_grpo`` computes them over the
group's live samples only and gives void samples advantage 0; on a batch without void samples it equals verl's
``grpo``.

verl loads this module in every process that imports verl (an entry point in the ``verl.plugins`` group), so
``algorithm.adv_estimator=mua_grpo`` is all a run needs. ``algorithm.norm_adv_by_std_in_grpo`` is honoured.
Loading it adds about 1.5 s to ``import verl`` (this package, and verl's ``core_algos``, which a trainer imports
anyway); ``VERL_USE_EXTERNAL_PLUGINS=none`` turns verl's plugins off.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mua_gym.integrations import require

__all__ = ["ESTIMATOR", "grpo_without_void"]

_core_algos = require("verl.trainer.ppo.core_algos", "verl")
_torch = require("torch", "verl")

#: The estimator's name in verl's registry (``algorithm.adv_estimator``).
ESTIMATOR = "mua_grpo"


def grpo_without_void(token_level_rewards: Any, response_mask: Any, index: Any, epsilon: float = 1e-6,
                      config: Any = None, **_: Any) -> tuple[Any, Any]:
    """(advantages, returns), both ``(batch, response_length)``: each live sample's score (its summed token
    rewards) less its group's mean over live samples, divided by their standard deviation plus ``epsilon``
    unless ``config.norm_adv_by_std_in_grpo`` is false; a group of one live sample keeps its score, as in verl.
    Samples whose ``response_mask`` is all 0 (void) get 0. ``index``: the group (prompt uid) of each sample."""
    normalise = True if config is None else bool(getattr(config, "norm_adv_by_std_in_grpo", True))
    scores = token_level_rewards.sum(dim=-1)
    live = response_mask.sum(dim=-1) > 0
    advantages = _torch.zeros_like(scores)
    groups: dict[Any, list[int]] = defaultdict(list)
    for row in range(scores.shape[0]):
        if live[row]:
            groups[index[row]].append(row)
    with _torch.no_grad():
        for rows in groups.values():
            group = scores[rows]
            if len(rows) == 1:
                mean, std = _torch.tensor(0.0), _torch.tensor(1.0)
            else:
                mean, std = group.mean(), group.std()
            advantages[rows] = (group - mean) / (std + epsilon) if normalise else group - mean
    advantages = advantages.unsqueeze(-1) * response_mask
    return advantages, advantages


if _core_algos.ADV_ESTIMATOR_REGISTRY.get(ESTIMATOR) is None:
    _core_algos.register_adv_est(ESTIMATOR)(grpo_without_void)
