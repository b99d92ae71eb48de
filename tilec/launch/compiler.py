"""One specialized variant of a kernel: Python function + argument specs ->
tile IR (built, checked, optimized), then the stages of the target's backend
(``targets/registry.py``: for a GPU, layouts, LLVM IR, assembly, binary), held
by a ``CompiledKernel`` with its ``KernelMetadata`` (resources and a cost
estimate).  ``TILEC_DUMP`` writes each stage to a file as it is made
(``dump.py``).

Which targets there are is the backends' business (``registry.target_names()``:
the interpreter's ``host``, each GPU arch, the compiled host's ``cpu``);
compiling for a GPU needs none.

With ``TILEC_CHECK=1`` in the environment (the test suite sets it) the IR as
built is verified and must read back from its text form unchanged; the pass
manager then checks after every pass.  A front-end or pass bug fails where it
happens, not in a launcher.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Optional, Sequence

from tilec.environment import check_enabled
from tilec.errors import LaunchOptionError
from tilec.ir.core import Function
from tilec.ir.printer import print_function
from tilec.launch.args import KernelArg, launch_values
from tilec.launch.dump import dump_stage
from tilec.targets.registry import Stage, backend_for


@dataclass(frozen=True)
class Options:
    """Launch options a variant is compiled for (part of the cache key), with
    Triton's names, defaults and meanings:

    * ``num_ctas``: blocks per thread-block cluster; only 1 yet (clusters come
      with the Hopper work), anything else is an error rather than ignored;
    * ``maxnreg``: the most registers a thread may use (the GPU assembler
      spills beyond it); the host has no registers and ignores it;
    * ``enable_fp_fusion``: whether ``a * b + c`` on floats may become one
      ``fma`` (rounded once); False keeps the multiply and the add apart, each
      rounded, on every target (the interpreter never fuses);
    * ``debug``: Triton's debug mode; the ``cpu`` target then checks every
      load, store and atomic against the arrays passed (``backends/host/bounds.py``).
      The interpreter checks them always; GPU code is the same either way;
    * ``matrix_instr_nonkdim``: Triton's AMD option, the rows and columns of
      the matrix instruction a dot runs on (16 or 32; 0: the compiler picks,
      32 where each wave gets whole 32x32 tiles); other targets ignore it;
    * ``waves_per_eu``: Triton's AMD option, the waves of this kernel each
      SIMD should hold at once (LLVM's ``amdgpu-waves-per-eu``: it budgets
      registers for that many; 0, the default: no request); other targets
      ignore it.
    """

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: Optional[int] = None
    enable_fp_fusion: bool = True
    debug: bool = False
    matrix_instr_nonkdim: int = 0
    waves_per_eu: int = 0

    def __post_init__(self):
        for name in ("num_warps", "num_stages", "num_ctas"):
            _check_positive_int(name, getattr(self, name))
        if self.num_warps & (self.num_warps - 1):
            raise LaunchOptionError(f"num_warps must be a power of 2 (1, 2, 4, 8, ...), got {self.num_warps}")
        if self.num_ctas != 1:
            raise LaunchOptionError(f"num_ctas={self.num_ctas}: thread-block clusters are not supported yet; "
                                    "launch with num_ctas=1")
        if self.maxnreg is not None:
            _check_positive_int("maxnreg", self.maxnreg)
        if self.matrix_instr_nonkdim not in (0, 16, 32) or isinstance(self.matrix_instr_nonkdim, bool):
            raise LaunchOptionError(f"matrix_instr_nonkdim must be 0 (the compiler picks), 16 or 32, "
                                    f"got {self.matrix_instr_nonkdim!r}")
        if isinstance(self.waves_per_eu, bool) or not isinstance(self.waves_per_eu, int) or self.waves_per_eu < 0:
            raise LaunchOptionError(f"waves_per_eu must be 0 (no request) or a positive int, got {self.waves_per_eu!r}")
        for name in ("enable_fp_fusion", "debug"):
            if not isinstance(getattr(self, name), bool):
                raise LaunchOptionError(f"{name} must be True or False, got {getattr(self, name)!r}")


def _check_positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LaunchOptionError(f"{name} must be a positive int, got {value!r}")


#: Every code option by name, with its default (``Options``' fields).
OPTION_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Options)}


@dataclass
class KernelMetadata:
    """What a variant needs and uses: its name, target and options (under
    Triton's ``kernel.metadata`` names: ``num_warps``, ``num_ctas``...).
    ``shared`` is the dynamic shared memory per block in bytes (requested at
    launch); ``registers`` (per thread) and the spill byte counts come from
    the backend's assembler and are None without it (or on the host).

    The cost estimate (``opt/cost.py``) is per program of the grid, from the
    optimized tile IR: ``bytes_moved`` (loads, stores, atomics; masked-off
    elements counted as accessed) and ``flops``, None when a loop's trip count
    depends on the arguments; ``bytes_formula`` and ``flops_formula`` always
    (``"1024 + 2048*cdiv(K, 16)"``); ``arithmetic_intensity`` is flops per
    byte (as those trip counts grow), None when nothing is moved.  Every field
    is a plain JSON value.
    """

    name: str
    target: str
    num_warps: int
    num_stages: int
    num_ctas: int = 1
    maxnreg: Optional[int] = None
    enable_fp_fusion: bool = True
    debug: bool = False
    matrix_instr_nonkdim: int = 0
    waves_per_eu: int = 0
    shared: int = 0
    registers: Optional[int] = None
    spill_stores: Optional[int] = None
    spill_loads: Optional[int] = None
    bytes_moved: Optional[int] = None
    flops: Optional[int] = None
    bytes_formula: str = "0"
    flops_formula: str = "0"
    arithmetic_intensity: Optional[float] = None
    # the tensor maps the kernel takes after its arguments, as
    # [descriptor parameter, [box...] innermost first, swizzle bytes] (NVIDIA's ``tma.py``)
    tensor_maps: list = field(default_factory=list)


@dataclass(eq=False)
class CompiledKernel:
    """A kernel compiled for one specialization and target.

    ``fn`` is the optimized tile IR (the host launcher interprets it); ``asm``
    holds every stage's output by name: ``"tir"`` (as built, before passes),
    ``"tir-opt"``, then each of the target's backend's ``stages`` (for a GPU:
    ``"tir-gpu"`` with layouts assigned, ``"llir"`` the optimized LLVM IR, its
    assembly text and, when the assembler is installed, the binary as bytes).
    ``runtime`` is the launcher's per-device state (the loaded function and
    argument packer), filled on first launch.
    """

    name: str
    fn: Function
    specs: tuple
    options: Options
    target: str
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: Optional[KernelMetadata] = None
    runtime: dict = field(default_factory=dict)

    @property
    def n_regs(self) -> Optional[int]:
        """Registers per thread (the assembler's count; None on the host or without it), Triton's name."""
        return self.metadata.registers if self.metadata else None

    @property
    def n_spills(self) -> Optional[int]:
        """Bytes spilled to local memory per thread (the assembler's spill stores), Triton's name."""
        return self.metadata.spill_stores if self.metadata else None

    def runtime_args(self, args: Sequence[KernelArg]) -> list:
        """The values of ``fn``'s arguments, picked by name from the classified ``args``."""
        by_name = dict(launch_values(args))
        return [by_name[n] for n in self.fn.arg_names]


def compile_variant(pyfn: Callable, args: Sequence[KernelArg], options: Options, target: str) -> CompiledKernel:
    """Build, check and optimize the IR of ``pyfn`` specialized for ``args``,
    then run the stages of ``target``'s backend."""
    # the front end pulls in the whole language: load it on first compile
    from tilec.ast_parse import CompileTarget, build_ir

    from tilec.opt import optimize

    specs = tuple(_arg_spec(a) for a in args)
    where = CompileTarget(*backend_for(target).language_target(target), num_warps=options.num_warps)
    built = build_ir(pyfn, list(specs), target=where)
    check_ir(built)
    compiled = CompiledKernel(built.name, built, specs, options, target, {"tir": print_function(built)})
    dump_stage(compiled, "tir")
    compiled.fn = optimize(built)
    compiled.asm["tir-opt"] = print_function(compiled.fn)
    dump_stage(compiled, "tir-opt")
    compiled.metadata = _metadata(compiled)
    backend_for(target).compile(compiled)
    dump_stage(compiled, "metadata")
    return compiled


def run_stages(compiled: CompiledKernel, stages: Sequence[Stage], context: Any) -> None:
    """Run a backend's ``stages`` in order from ``compiled.fn``, each output
    kept in ``compiled.asm`` under the stage's name (IR printed) and dumped as
    it is made (``TILEC_DUMP``); a stage that returns None ends the run."""
    value: Any = compiled.fn
    for stage in stages:
        value = stage.run(value, context)
        if value is None:
            return
        compiled.asm[stage.name] = print_function(value) if isinstance(value, Function) else value
        dump_stage(compiled, stage.name)


def _metadata(compiled: CompiledKernel) -> KernelMetadata:
    """The metadata every target has: name, target, options and the cost estimate of the optimized IR."""
    from tilec.opt.cost import estimate_cost  # tilec.opt is loaded by the first compile

    cost = estimate_cost(compiled.fn)
    return KernelMetadata(compiled.name, compiled.target, **asdict(compiled.options), bytes_moved=cost.bytes,
                          flops=cost.flops, bytes_formula=cost.bytes_formula, flops_formula=cost.flops_formula,
                          arithmetic_intensity=cost.intensity)


def _arg_spec(a: KernelArg):
    from tilec.ast_parse import ArgSpec

    return ArgSpec(a.name, a.type, a.value if a.is_constexpr else None, a.attrs)


def check_ir(fn: Function) -> None:
    """Under ``TILEC_CHECK=1``: ``fn`` verifies and survives its text form."""
    if not check_enabled():
        return
    from tilec.ir.verify import check_roundtrip, verify_function

    verify_function(fn)
    check_roundtrip(fn)
