"""The tensor memory accelerator's PTX (``backends/nvidia/tma.py``), checked
without a GPU: the descriptor matmul compiled for sm_90/sm_90a takes one
128-byte, 64-byte aligned ``__grid_constant__`` tensor map a (descriptor,
box, swizzle), initializes an mbarrier a slot, copies each slot with one
``cp.async.bulk.tensor`` a swizzle atom after announcing the slot's bytes,
spins on ``mbarrier.try_wait.parity`` instead of ``cp.async.wait_group``,
and ``ptxas`` assembles it without spills.  ``tensor_map_for`` picks the
box and swizzle each buffer layout is written with."""
from __future__ import annotations

import re

import numpy as np
import pytest
from kernels.descriptor_matmul import compile_descriptor_matmul

from tilec.backends.nvidia import ptxas
from tilec.backends.nvidia.tma import TensorMap, tensor_map_for
from tilec.ir.layouts import Shared
from tilec.ir.layouts_nvidia import swizzled_layout
from tilec.ir.types import TileType, f16, f32, i8


def compiled(arch: str, bm=128, bn=128, bk=64, num_stages=3):
    a = np.zeros((512, 512), np.float16)
    b = np.zeros((512, 512), np.float16)
    c = np.zeros((512, 512), np.float32)
    return compile_descriptor_matmul(a, b, c, (bm, bn, bk), target=arch, num_warps=8, num_stages=num_stages)


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_descriptor_blocks_are_copied_by_the_accelerator(arch):
    k = compiled(arch)
    ptx = k.asm["ptx"]
    # a: 128x64 f16 rows of 128 bytes, one box; b: 64x128 rows of 256 bytes, two 64-wide atoms;
    # c (stored): 128x128 f32 rows of 512 bytes, four 32-wide atoms
    assert k.metadata.tensor_maps == [["a_desc", [64, 128], 128], ["b_desc", [64, 64], 128],
                                      ["c_desc", [32, 128], 128]]
    params = re.findall(r"\.param \.align 64 \.b8 \w+_param_(\d+)\[128\]", ptx)
    own = len(k.fn.args)
    assert params == [str(own), str(own + 1), str(own + 2)]  # after the kernel's own parameters
    slots = 4 if arch == "sm_90a" else 3  # a warpgroup dot left running takes one more slot
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * slots
    assert ptx.count("mbarrier.inval.shared::cta.b64") == 2 * slots  # after the loop, before the bytes are reused
    copies = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes", ptx)
    assert len(copies) == 3 * 3  # a and b's two atoms, in the prologue's two iterations and the loop
    announced = re.findall(r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%rd\d+\], (\d+);", ptx)
    assert announced == ["16384"] * 6  # 128 x 64 halves, in each of a's and b's slots
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx and "cvta.param.u64" in ptx
    assert "cp.async.cg" not in ptx and "cp.async.wait_group" not in ptx
    if ptxas.find_ptxas() is None:
        pytest.skip("no ptxas to assemble the PTX")
    result = ptxas.assemble(ptx, arch)
    assert result.spill_stores == 0 and result.spill_loads == 0


def test_before_hopper_descriptor_blocks_stay_cp_async():
    k = compiled("sm_80", bm=64, bn=64, bk=32)
    assert k.metadata.tensor_maps == [] and "cp.async.bulk" not in k.asm["ptx"] and "cp.async" in k.asm["ptx"]


def buffer(shape, elem, layout):
    return TileType(shape, elem, layout)


@pytest.mark.parametrize("rows,cols,elem,box,swizzle", [
    (128, 64, f16, (64, 128), 128), (64, 256, f16, (64, 64), 128), (64, 32, f16, (32, 64), 64),
    (32, 16, f16, (16, 32), 32), (64, 32, f32, (32, 64), 128), (128, 128, i8, (128, 128), 128),
])
def test_each_swizzled_buffer_is_written_in_boxes_of_one_atom(rows, cols, elem, box, swizzle):
    layout = swizzled_layout((3, rows, cols), (2, 1, 0), elem.bytes)
    assert tensor_map_for(buffer((3, rows, cols), elem, layout), "d") == TensorMap("d", box, swizzle)


def test_layouts_no_box_writes_have_no_tensor_map():
    column_major = swizzled_layout((3, 64, 64), (1, 2, 0), 2)  # the matrix's fast dim is not the tensor's last
    assert tensor_map_for(buffer((3, 64, 64), f16, column_major), "d") is None
    odd = Shared(4, 1, 8, (2, 1, 0))  # 8-byte vectors: not the accelerator's 16-byte chunks
    assert tensor_map_for(buffer((3, 64, 64), f16, odd), "d") is None
    tall = swizzled_layout((3, 512, 64), (2, 1, 0), 2)  # a box is at most 256 rows
    assert tensor_map_for(buffer((3, 512, 64), f16, tall), "d") is None


def test_a_descriptor_store_is_a_bulk_copy_from_shared_memory():
    from kernels.descriptor_matmul import compile_descriptor_matmul

    a, c = np.zeros((256, 256), np.float16), np.zeros((256, 256), np.float32)
    k = compile_descriptor_matmul(a, a, c, (128, 128, 64), target="sm_90a", num_warps=8, num_stages=3)
    # c: 128 x 128 f32 rows of 512 bytes, four 32-column atoms of 128 bytes
    assert k.metadata.tensor_maps[-1] == ["c_desc", [32, 128], 128]
    ptx = k.asm["ptx"]
    stores = re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group", ptx)
    assert len(stores) == 4 and "cp.async.bulk.commit_group;" in ptx and "cp.async.bulk.wait_group.read 0;" in ptx
    assert "st.global" not in ptx  # every element of c goes through the accelerator
    if ptxas.find_ptxas() is not None:
        result = ptxas.assemble(ptx, "sm_90a")
        assert result.spill_stores == 0 and result.spill_loads == 0
