"""The backends: one package per target family (``interpreter``: the host;
``nvidia``: NVIDIA GPUs), each defining ``BACKEND``, a
``tilec.targets.registry.Backend``.  Nothing outside a backend's own package
imports it by name: ``tilec.targets.registry.FAMILIES`` lists them and the
rest of tilec asks the registry."""
