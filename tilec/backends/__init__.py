"""The backends: one package per target family (``interpreter``: target
``host``, the numpy reference interpreter; ``nvidia``: NVIDIA GPUs; ``host``:
target ``cpu``, compiled host code), each defining ``BACKEND``, a
``tilec.targets.registry.Backend``.  Nothing outside a backend's own package
imports it by name: ``tilec.targets.registry.FAMILIES`` lists them and the
rest of tilec asks the registry."""
