"""Judging agents, not running episodes: evaluation runs and their folders (:mod:`.evaluate`), comparing and
reporting runs (:mod:`.compare`, :mod:`.report`, :mod:`.export`), the perturbation gap table (:mod:`.gap`), the
reference agents (:mod:`.agents`: oracle, fair, random, any LLM), the blind and exploit agents and the reward audit
(:mod:`.baselines`, :mod:`.audit`), and the action fuzzer (:mod:`.fuzz`). Nothing in the runtime imports this
package."""
