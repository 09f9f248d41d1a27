"""The domain kit: mechanics that every domain's world generator and task maker share, kept once here.

A domain imports what it needs from the submodules (``mua_gym.kit.sampling``); the core never imports the kit.
"""
