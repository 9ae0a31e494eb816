"""The torch device a :class:`sentvec.TransformerEncoder` runs on: the default one, and a
requested one checked against this torch build (a clear ``ValueError`` instead of torch's
``AssertionError`` deep inside the first ``.to()``)."""

from __future__ import annotations

import torch

__all__ = ["default_device", "resolve_device"]


def default_device() -> torch.device:
    """``cuda`` when torch sees a CUDA device, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``device`` as a torch device that this torch build can use, else a clear ValueError
    (instead of torch's AssertionError deep inside the first ``.to()``)."""
    if device is None:
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={str(device)!r} is not a torch device ({exc})") from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ValueError(
                f"device={str(device)!r}, but this torch ({torch.__version__}) sees "
                "no CUDA device; use device='cpu'"
            )
        if dev.index is not None and dev.index >= n:
            raise ValueError(
                f"device={str(device)!r}, but torch sees {n} CUDA device(s) (cuda:0..cuda:{n - 1})"
            )
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(
                f"device={str(device)!r}, but MPS is not available here; use device='cpu'"
            )
    return dev
