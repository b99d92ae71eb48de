"""The tile IR: types, values, ops, layouts (every backend's, side by side), builder,
verifier, text form and interpreter."""
from tilec.ir.types import *  # noqa: F401,F403
from tilec.ir.core import UNKNOWN_LOC, Block, Function, Loc, Module, Op, Value, VerifyError, clone_block, clone_op, map_block, walk
from tilec.ir.ops import *  # noqa: F401,F403
from tilec.ir.gpu_ops import *  # noqa: F401,F403
from tilec.ir.indexing_ops import *  # noqa: F401,F403
from tilec.ir.map_ops import *  # noqa: F401,F403
from tilec.ir.builder import Builder  # noqa: F401
from tilec.ir import layouts_nvidia  # noqa: F401 (its layouts enter the text form's words)
