"""How a launch makes a kernel's tensor maps (``cuda.TensorMapSource``), without a
GPU: each comes from the launch values of its host descriptor's base, shape
and strides, is encoded once per distinct tensor (the driver's encoding is
slower than a launch), and follows the kernel's own parameters in its frame."""
from __future__ import annotations

import numpy as np
from kernels.descriptor_matmul import compile_descriptor_matmul

from tilec.backends.nvidia import cuda, cuda_driver as cd, libcuda


def test_each_tensor_is_encoded_once_from_its_descriptors_launch_values(monkeypatch):
    a, b, c = np.zeros((256, 128), np.float16), np.zeros((128, 512), np.float16), np.zeros((256, 512), np.float32)
    k = compile_descriptor_matmul(a, b, c, (128, 128, 64), target="sm_90a", num_warps=8)
    encoded = []
    monkeypatch.setattr(cd, "encode_tensor_map", lambda *args: encoded.append(args) or bytes([len(encoded)]) * 128)
    names = list(k.fn.arg_names)
    sources = [cuda.TensorMapSource.of(k, names, *m) for m in k.metadata.tensor_maps]
    values = {"a_desc": 0x1000, "a_desc_shape0": 256, "a_desc_shape1": 128, "a_desc_stride0": 128,
              "b_desc": 0x2000, "b_desc_shape0": 128, "b_desc_shape1": 512, "b_desc_stride0": 512,
              "c_desc": 0x4000, "c_desc_shape0": 256, "c_desc_shape1": 512, "c_desc_stride0": 512}
    launch = [values.get(n, 0) for n in names]
    first = [source(launch) for source in sources]
    assert encoded == [(0x1000, 2, (256, 128), (128,), (64, 128), 128), (0x2000, 2, (128, 512), (512,), (64, 64), 128),
                       (0x4000, 4, (256, 512), (512,), (32, 128), 128)]  # c: f32
    assert [source(launch) for source in sources] == first and len(encoded) == 3  # the same tensors: kept
    launch[names.index("a_desc")] = 0x3000
    sources[0](launch)
    assert encoded[-1][0] == 0x3000 and len(encoded) == 4
    frame = cuda.parameter_frame(k)
    assert frame.kinds[-3:] == (libcuda.TENSOR_MAP,) * 3 and len(frame.kinds) == len(names) + 3
