"""Where a subject's tensors live: the device of its network, moves to it and back, and timing on it.

Probes feed a subject's networks observations, actions and batches they build on the CPU (numpy). A network
on a GPU takes its inputs on its own device, so every probe moves what it feeds a module there first and
brings results back to the CPU before writing artifacts::

    from rlaudit.devices import module_device, to_device, to_numpy

    device = module_device(policy)
    value = policy.get_value(to_device(obs, device, dtype="float32"))
    ctx.write_npz("values", values=to_numpy(value))

This module runs in subjects' own interpreters: it imports only the standard library at import time (torch
and numpy inside the functions that need them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def module_device(module: Any) -> Any:
    """The ``torch.device`` of ``module``: its first parameter's, else its first buffer's, else its ``device``
    attribute (Stable-Baselines3's policies have one), else the CPU.

    A module split over several devices is reported by its first parameter, which is where its inputs go in
    the usual layout (the input layer first).
    """
    import torch

    for getter in ("parameters", "buffers"):
        items = getattr(module, getter, None)
        if callable(items):
            first = next(iter(items()), None)
            if first is not None:
                return first.device
    device = getattr(module, "device", None)
    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        return torch.device(device)
    return torch.device("cpu")


def _dtype(dtype: Any) -> Any:
    import torch

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    found = getattr(torch, str(dtype), None)
    if not isinstance(found, torch.dtype):
        raise ValueError(f"unknown torch dtype {dtype!r}; expected a torch.dtype or a name like 'float32'")
    return found


def to_device(x: Any, device: Any, dtype: Any = None) -> Any:
    """``x`` as tensors on ``device``: arrays, lists, numbers and tensors become tensors (a tensor already
    there, of that dtype, is returned as it is); dicts and tuples are converted leaf by leaf (a Dict or Tuple
    observation, as :func:`rlaudit.spaces.rollout.map_leaves` walks them).

    Args:
        x: A numpy array, tensor, list, number, or a dict/tuple of them.
        device: A ``torch.device`` or its name (``"cpu"``, ``"cuda:0"``); typically :func:`module_device`.
        dtype: A ``torch.dtype`` or its name (``"float32"``, ``"long"``); None keeps each leaf's own.
    """
    import torch

    dt = _dtype(dtype)
    if isinstance(x, Mapping):
        return {k: to_device(v, device, dt) for k, v in x.items()}
    if isinstance(x, tuple):
        items = [to_device(v, device, dt) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dt)
    return torch.as_tensor(x, dtype=dt, device=device)


def to_numpy(x: Any) -> Any:
    """A tensor on any device as a numpy array on the CPU (detached; bfloat16 as float32); other values through
    ``np.asarray``. Dicts and tuples are converted leaf by leaf."""
    import numpy as np

    if isinstance(x, Mapping):
        return {k: to_numpy(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return type(x)(*map(to_numpy, x)) if hasattr(x, "_fields") else tuple(map(to_numpy, x))
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":  # numpy has no bfloat16
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def resolve_device(name: Any = "cpu") -> Any:
    """The ``torch.device`` a config's device setting names: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``,
    or ``"auto"`` (the first CUDA device when there is one, else the CPU).

    Raises:
        ValueError: A name torch does not know, or a CUDA device on a machine (or torch build) without one,
            saying what was found and what to set instead.
    """
    import torch

    text = "cpu" if name is None else str(name).strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(text)
    except RuntimeError as exc:
        raise ValueError(
            f"device {name!r} is not a torch device ({exc}); expected cpu, cuda, cuda:N or auto"
        ) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = torch.version.cuda or getattr(torch.version, "hip", None)
            why = "this torch build has no CUDA" if not build else "no CUDA device is visible"
            raise ValueError(
                f"the config asks for device {name!r} but {why} (torch {torch.__version__}); set the device "
                "to cpu (or auto) on this machine, or run on one with a GPU"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"the config asks for device {name!r} but only {torch.cuda.device_count()} CUDA device(s) are "
                "visible (CUDA_VISIBLE_DEVICES renumbers them from 0)"
            )
    return device


def is_cuda(device: Any) -> bool:
    """True for a CUDA (or ROCm, which torch calls CUDA) device."""
    return getattr(device, "type", str(device).split(":")[0]) == "cuda"


def synchronize(device: Any) -> None:
    """Wait for the work queued on a CUDA ``device`` to finish (nothing for other devices, or when CUDA was
    never initialized in this process): a wall-clock timing taken right after covers the GPU's work, not
    only the launch of its kernels."""
    if not is_cuda(device):
        return
    import torch

    if torch.cuda.is_initialized():
        torch.cuda.synchronize(device)


def describe(device: Any) -> str:
    """``"cpu"``, or a CUDA device with its name and the CUDA (or ROCm) version of the torch build, e.g.
    ``"cuda:0 NVIDIA H100 80GB HBM3 (CUDA 12.4)"``."""
    if not is_cuda(device):
        return str(device)
    import torch

    index = device.index if getattr(device, "index", None) is not None else torch.cuda.current_device()
    hip = getattr(torch.version, "hip", None)
    build = f"ROCm {hip}" if hip else f"CUDA {torch.version.cuda}"
    return f"cuda:{index} {torch.cuda.get_device_name(index)} ({build})"


# -- the machine's accelerators, without importing torch (for fingerprints) -------------------------------------

NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")
DEV = Path("/dev")
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
VISIBLE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def machine_accelerators(
    env: Mapping[str, str] | None = None, nvidia: Path = NVIDIA_PROC, kfd: Path = KFD_NODES, dev: Path = DEV
) -> dict[str, Any]:
    """The GPUs this machine's driver lists and the variables that choose among them, read from ``/proc``
    and ``/sys`` in a few microseconds (no torch import, no driver call).

    Args:
        env: The environment a subject's worker gets (default: this process's).
        nvidia, kfd: Where the NVIDIA and AMD (ROCm) drivers list their GPUs (tests point them elsewhere).
        dev: Where the device nodes are: a container that hides ``/proc/driver/nvidia`` still has
            ``/dev/nvidia0``, ... (each counted as an ``NVIDIA GPU``).

    Returns:
        ``{"gpus": [model names, sorted], "visible": {variable: value}}``; ``gpus`` is empty on a machine
        without a GPU driver.
    """
    gpus: list[str] = []
    if nvidia.is_dir():
        for entry in sorted(nvidia.iterdir()):
            model = "NVIDIA GPU"
            try:
                for line in (entry / "information").read_text(errors="replace").splitlines():
                    key, _, value = line.partition(":")
                    if key.strip() == "Model":
                        model = value.strip()
                        break
            except OSError:
                pass
            gpus.append(model)
    if not gpus and dev.is_dir():
        gpus.extend("NVIDIA GPU" for node in dev.glob("nvidia[0-9]*") if node.name[6:].isdigit())
    if kfd.is_dir():
        for node in sorted(kfd.iterdir()):
            try:
                name = (node / "name").read_text(errors="replace").strip()
                gpu_id = (node / "gpu_id").read_text(errors="replace").strip()
            except OSError:
                continue
            if gpu_id and gpu_id != "0":  # node 0 with gpu_id 0 is the CPU
                gpus.append(f"AMD {name}")
    source = os.environ if env is None else env
    visible = {k: source[k] for k in VISIBLE_VARIABLES if k in source}
    return {"gpus": sorted(gpus), "visible": visible}
