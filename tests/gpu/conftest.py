"""What the GPU tests share."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def torch():
    """torch, with its CUDA context made (tilec launches share the primary context it sets up);
    the test is skipped without torch."""
    torch = pytest.importorskip("torch")
    torch.zeros(1, device="cuda")
    return torch
