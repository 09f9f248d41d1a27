"""The module ``vf-eval mua-gym-verifiers`` imports: verifiers finds a taskset by a top-level module name.

Everything lives in :mod:`mua_gym.integrations.verifiers`.
"""

from mua_gym.integrations.verifiers import *  # noqa: F401,F403
from mua_gym.integrations.verifiers import __all__  # noqa: F401
