"""The front end: a kernel's Python source -> tile IR.

Start reading at ``tilec/ast_parse.py``, the entry point (``build_ir``) and
the visitor, ``CodeGenerator``, that walks a kernel's AST and builds IR as it
goes; the modules here are the rest of it:

* ``control.py``: ``if``/``for``/``while`` as structured IR, and the early
  ``return`` rewrite (``ControlFlowMixin``, part of the visitor);
* ``calls.py``: calls -- ``tl.*`` functions and tensor methods, inlined
  ``@jit`` functions, Python builtins and ``math`` on compile-time values
  (``CallsMixin``, part of the visitor);
* ``semantic.py``: the typing rules (promotion, broadcasting, weak Python
  numbers) and the IR of operators on tensors;
* ``tl_ops.py``: the IR each ``tl.*`` function builds, looked up by the
  stub of ``tilec.language`` it implements, and its program geometry,
  creation, cast, memory, atomic and debugging functions; ``tl_math.py``
  (elementwise math), ``tl_libdevice.py`` (the libdevice functions),
  ``tl_shape.py`` (shapes), ``tl_reduce.py`` (reductions, scans, ``dot``),
  ``tl_random.py`` (Philox random numbers), ``tl_indexing.py`` (gather, flip,
  cat, sort, topk, histogram, swizzle2d), ``tl_operators.py``
  (``tl.add``/``sub``/``mul``), ``tl_target.py`` (``tl.target_info``,
  ``tl.extra.cuda.num_warps``/``num_threads``: the compile target's facts),
  ``tl_dot_scaled.py`` (``dot_scaled``, decoded to bf16/fp16 and scaled
  before a ``dot``), ``tl_block_pointers.py`` and ``tl_tensor_descriptors.py``
  (``make_block_ptr``, ``advance``, ``make_tensor_descriptor`` and loads and
  stores through them, as pointer tiles and masks), ``tl_custom.py``
  (``inline_asm_elementwise``, ``map_elementwise``) and ``tl_compat.py``
  (``assume``: kept for Triton compatibility) hold the rest;
* ``common.py``: what those share: a function's source checked for the
  walk, argument binding, and how front-end values are told apart;
* ``aggregates.py``: what a value made of several runtime scalars (a block
  pointer, a tensor descriptor) tells control flow so that it can be carried;
* ``source.py``: a Python function's source, file, lines and syntax tree,
  read once; the disk cache and ``JITFunction.src`` read kernels through it too.

The front end imports ``tilec.language``, ``tilec.ir`` and ``tilec.errors``,
nothing of the optimizer, the backends or the launcher.
"""
