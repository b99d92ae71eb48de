"""What the H100 runs, read from the machine code (``nvdisasm``): the
pipelined matmul and attention kernels issue Hopper's warpgroup matrix
instructions (``HGMMA``) and no ``mma.sync`` (``HMMA``), and neither touches
local memory (``LDL``/``STL``: spilled registers or a register array
indexed at run time).  Skipped off sm_90 devices and without ``nvdisasm``."""
from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest

from kernels import attention as att
from kernels.matmul import element_strides, matmul_kernel

pytestmark = pytest.mark.gpu


def sass(compiled) -> str:
    """The disassembly of a compiled kernel's cubin."""
    cubin = compiled.asm.get("cubin")
    if cubin is None:
        pytest.skip("no ptxas: the kernel was loaded from PTX, there is no cubin to read")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run(["nvdisasm", f.name], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def hopper(torch):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
    if shutil.which("nvdisasm") is None:
        pytest.skip("needs nvdisasm")
    return torch


def assert_warpgroup_code(text: str) -> None:
    assert text.count("HGMMA") > 0, "no warpgroup matrix instruction"
    assert "HMMA" not in text, "an mma.sync fell back"
    assert "LDL" not in text and "STL" not in text, "local memory traffic"


@pytest.mark.parametrize("config", [(128, 128, 64, 8, 4, 3), (256, 128, 64, 8, 8, 3)],
                         ids=lambda c: "_".join(map(str, c)))
def test_pipelined_matmul_runs_hgmma_without_local_memory(hopper, config):
    torch = hopper
    a = torch.randn(512, 512, device="cuda").half()
    c = torch.empty(512, 512, device="cuda").half()
    bm, bn, bk, group, warps, stages = config
    compiled = matmul_kernel.compile(a, a, c, 512, 512, 512, *element_strides(a), *element_strides(a),
                                     *element_strides(c), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                     GROUP_SIZE_M=group, ACTIVATION="", num_warps=warps, num_stages=stages)
    assert_warpgroup_code(sass(compiled))


@pytest.mark.parametrize("causal", [False, True])
def test_attention_runs_hgmma_without_local_memory(hopper, causal):
    torch = hopper
    q = torch.randn(1, 2, 512, 128, device="cuda").half()
    out = torch.empty_like(q)
    lse = torch.empty(2, 512, device="cuda")
    att.launch_attention(att._attn_fwd, q, q, q, out, lse, causal, 128 ** -0.5, block_m=128, block_n=64,
                         num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    compiled = next(k for k in att._attn_fwd.cache.values() if k.metadata.num_warps == 8)
    assert_warpgroup_code(sass(compiled))
