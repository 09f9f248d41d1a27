"""The world an episode acts on: one live SQLite database (:mod:`.database`, :class:`World`) over the image it
starts from (:mod:`.image`: the image, its change log, deltas and snapshots), SQL compiled and run
(:mod:`.sql`), row hashes and the comparison of two worlds' changes (:mod:`.diff`), and the memo of values
derived from it (:mod:`.memo`)."""

from mua_gym.world.database import Memory, World

__all__ = ["Memory", "World"]
