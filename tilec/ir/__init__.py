"""The tile IR: types, values, ops, builder, verifier, text form and interpreter."""
from .types import *  # noqa: F401,F403
from .core import (  # noqa: F401
    UNKNOWN_LOC, Block, Function, Loc, Module, Op, Value, VerifyError, clone_block, clone_op, map_block, walk,
)
from .ops import *  # noqa: F401,F403
from .gpu_ops import *  # noqa: F401,F403
from .builder import Builder  # noqa: F401
