"""Targets as data (``base.Target``) and the registry that maps a target's
name to the backend that compiles for it (``registry``: the ``Backend``
interface every backend implements).  Importing this package does not load
llvmlite or any backend; emitting does."""
from tilec.targets.base import Target

__all__ = ["Target"]
