"""Host-side helpers kernels take as arguments, under Triton's ``triton.tools`` names:
``tensor_descriptor.TensorDescriptor``.  Plain data: this room imports nothing of tilec."""
