"""Declaring and finding domains: what a domain author declares (:mod:`.declaration`, :class:`Domain`; what a
dual-control domain's user understands in words, :mod:`.vocabulary`), how the installed ones are found and
registered as envs (:mod:`.registry`), TAU2's data read at run time for a domain's ``tau2`` source (:mod:`.tau2`),
and generated tasks and world images kept on disk between processes (:mod:`.disk_cache`)."""

from mua_gym.domain.declaration import Domain, TaskSource, WorldBuilder, env_name
from mua_gym.domain.vocabulary import Choice, Setting, UserVocabulary

__all__ = ["Choice", "Domain", "Setting", "TaskSource", "UserVocabulary", "WorldBuilder", "env_name"]
