"""The domains shipped with mua_gym; each subpackage exposes one ``DOMAIN`` (a :class:`mua_gym.Domain`)."""
