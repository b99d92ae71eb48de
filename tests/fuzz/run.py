"""Running a fuzz case: the program's source is written to a file and imported
(so the real front end runs, with real source locations), launched on host
arrays (the interpreter) or CUDA tensors, and compared with the numpy model
(host) or with the interpreter (GPU).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile

import numpy as np

from .dtypes import Undefined
from .program import Program, mismatch

KERNEL_DIR = tempfile.mkdtemp(prefix="tilec-fuzz-")


def load_kernel(program: Program):
    """``fuzz_kernel`` of ``program``, imported from a file named after its source's hash."""
    source = program.source()
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(KERNEL_DIR, f"fuzz_{digest}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"fuzz_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fuzz_kernel


def run_host(program: Program, inputs: dict) -> dict:
    """The outputs the kernel writes on host arrays (the interpreter)."""
    outputs = program.fresh_outputs()
    args, consts = program.launch_args({k: v.copy() for k, v in inputs.items()}, outputs)
    load_kernel(program)[program.grid](*args, **consts)
    return outputs


def run_cuda(program: Program, inputs: dict) -> dict:
    """The outputs the kernel writes on the GPU (torch CUDA tensors), copied back."""
    import torch
    on_gpu = {k: to_cuda(torch, v) for k, v in inputs.items()}
    host = program.fresh_outputs()
    outputs = {k: to_cuda(torch, v) for k, v in host.items()}
    args, consts = program.launch_args(on_gpu, outputs)
    load_kernel(program)[program.grid](*args, **consts)
    torch.cuda.synchronize()
    return {k: from_cuda(torch, t, host[k].dtype) for k, t in outputs.items()}


def to_cuda(torch, a: np.ndarray):
    """``a`` on the GPU; bf16 travels as its 16 bits."""
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).cuda().view(torch.bfloat16)
    return torch.from_numpy(a.copy()).cuda()


def from_cuda(torch, t, dtype: np.dtype) -> np.ndarray:
    if dtype.name == "bfloat16":
        return t.view(torch.int16).cpu().numpy().view(dtype)
    return t.cpu().numpy()


def model_outputs(program: Program, inputs: dict):
    """(the model's outputs, scale), or None when the case is undefined behaviour."""
    try:
        return program.evaluate({k: v.copy() for k, v in inputs.items()})
    except Undefined:
        return None


def compare(program: Program, got: dict, want: dict, scale: float, what: str) -> None:
    """Raise ``AssertionError`` (with the kernel's source) when an output differs."""
    written = program.written()
    problems = [f"{name}: {why}" for name in want
                if (why := mismatch(got[name], want[name], written[name], scale))]
    if problems:
        raise AssertionError(f"{what} differ:\n  " + "\n  ".join(problems) + "\n" + describe(program))


def describe(program: Program) -> str:
    return (f"grid={program.grid} sizes={program.sizes} blocks={program.blocks} s={program.s}\n"
            f"{program.source()}")


def check_case(program: Program, inputs: dict, device: str = "host") -> bool:
    """Run one case on ``device`` (``host``: interpreter vs model; ``cuda``: also
    GPU vs interpreter); False when the case is undefined behaviour and was skipped."""
    model = model_outputs(program, inputs)
    if model is None:
        return False
    want, scale = model
    host = run_host(program, inputs)
    compare(program, host, want, scale, "interpreter and numpy model")
    if device == "cuda":
        compare(program, run_cuda(program, inputs), host, scale, "GPU and interpreter")
    return True
