"""The one place that chooses a device. Lessons receive a torch.device and only ever call `.to(device)`."""

from __future__ import annotations

from gradlab.errors import GradlabError, OptionError

DEVICES = ("auto", "cpu", "cuda", "mps")


def _cuda_available(torch) -> bool:
    return bool(torch.cuda.is_available())


def _mps_available(torch) -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(name: str):
    """Return (torch.device, note or None) for --device NAME.

    auto picks CUDA, then MPS (saying so in a note), else the CPU; an explicit device that is absent is an error.
    """
    import torch

    if name not in DEVICES:
        raise GradlabError(f"unknown device {name!r}: use one of {', '.join(DEVICES)}")
    if name == "auto":
        if _cuda_available(torch):
            return torch.device("cuda"), f"--device auto: using CUDA ({torch.cuda.get_device_name(0)})"
        if _mps_available(torch):
            return torch.device("mps"), "--device auto: using Apple MPS"
        return torch.device("cpu"), None  # the expected case on a laptop: the header says "device cpu"
    if name == "cuda" and not _cuda_available(torch):
        why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU was found"
        raise OptionError("device", lambda say: f"{say('device', 'cuda')} asked for, but {why}; use "
                                                f"{say('device', 'cpu')} (or {say('device', 'auto')})")
    if name == "mps" and not _mps_available(torch):
        raise OptionError("device", lambda say: f"{say('device', 'mps')} asked for, but Apple MPS is not available; "
                                                f"use {say('device', 'cpu')} (or {say('device', 'auto')})")
    return torch.device(name), None
