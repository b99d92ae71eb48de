"""``tilec.autotune`` as a module: the import path code written before the
autotuner moved into ``tilec/launch/autotune.py`` keeps working
(``from tilec.autotune import Autotuner``; the conformance shim imports it).

``tilec/__init__.py`` imports this module before it binds the name
``tilec.autotune`` to the decorator, so ``@tilec.autotune(...)`` stays the
decorator after anyone imports the module."""
from tilec.launch.autotune import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics"]
