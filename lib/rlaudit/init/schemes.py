"""Infer a layer's initialization scheme and gain from its weights (pure numpy; no torch needed).

What each scheme leaves in a weight matrix ``W`` of shape (fan_out, fan_in):

==========================  ========================================================================
orthogonal, gain g          every singular value equals g (rows or columns orthonormal, scaled by g);
                            a single row or column has norm exactly g at every seed
PyTorch default (Linear)    ``kaiming_uniform_(a=sqrt(5))``: U(-b, b) with b = 1/sqrt(fan_in), i.e. a
                            Kaiming-uniform gain of 1/sqrt(3); its bias U(+-1/sqrt(fan_in))
Kaiming (He), gain g        uniform bound g * sqrt(3 / fan_in), or normal std g / sqrt(fan_in)
Xavier (Glorot), gain g     uniform bound g * sqrt(6 / (fan_in + fan_out)), or normal std
                            g * sqrt(2 / (fan_in + fan_out))
constant                    std 0 (zero biases of the PPO scheme)
==========================  ========================================================================

The distribution's shape separates uniform (kurtosis 1.8) from normal (3); the singular-value spectrum
separates orthogonal (flat) from both. With a square layer Kaiming and Xavier coincide; the Kaiming name is
used then. References: Saxe et al. 2014 (orthogonal), He et al. 2015, Glorot & Bengio 2010,
``torch.nn.Linear.reset_parameters``; the PPO scheme is detail 2 of Huang et al. 2022.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STANDARD_GAINS: dict[str, float] = {
    "1": 1.0,
    "√2": math.sqrt(2.0),
    "5/3": 5.0 / 3.0,
    "3/4": 0.75,
    "0.01": 0.01,
    "1/√3": 1.0 / math.sqrt(3.0),
}
"""Gains that appear in practice (linear/sigmoid, ReLU, tanh, SELU, the PPO policy head, PyTorch's default)."""

ORTHO_FLATNESS = 1e-3
"""(max - min) / mean singular value below this: the spectrum is flat, the matrix orthogonal."""


@dataclass
class Scheme:
    """The inferred initialization of one parameter.

    Attributes:
        scheme: ``orthogonal``, ``torch-default``, ``kaiming-uniform``, ``kaiming-normal``, ``xavier-uniform``,
            ``xavier-normal``, ``uniform``, ``normal``, ``zeros``, ``constant`` or ``unknown``.
        gain: The gain the scheme was applied with (orthogonal: the singular value; constant: the value).
        gain_name: The standard gain it matches (``"√2"``), or ``""``.
        tolerance: Relative uncertainty of ``gain`` (estimation noise; 0 for exact schemes).
        detail: One phrase, e.g. ``"orthogonal, gain 1.414 (√2)"``.
    """

    scheme: str
    gain: float
    gain_name: str = ""
    tolerance: float = 0.0
    detail: str = ""

    def same_as(self, other: Scheme) -> bool:
        """Same scheme and a gain equal within both estimates' tolerances (and 1% for exact schemes)."""
        if self.scheme != other.scheme:
            return False
        if self.gain == other.gain:
            return True
        tol = max(self.tolerance, other.tolerance, 0.01)
        scale = max(abs(self.gain), abs(other.gain), 1e-12)
        return abs(self.gain - other.gain) / scale <= tol


def name_gain(gain: float, tol: float) -> str:
    """The standard gain within ``tol`` (relative) of ``gain``, or ``""``."""
    for name, value in STANDARD_GAINS.items():
        if abs(gain - value) <= tol * value:
            return name
    return ""


def _fmt_gain(g: float, name: str) -> str:
    return f"{g:.3g}" + (f" ({name})" if name and name != f"{g:.3g}" else "")


def infer_scheme(rows: Sequence[dict[str, Any]], *, weight_fan_in: int | None = None) -> Scheme:
    """Infer the scheme of one parameter from its statistics at several seeds.

    Args:
        rows: One dict per seed with ``ndim``, ``numel``, ``fan_in``, ``fan_out``, ``shape`` ("64x110"),
            ``mean``, ``std``, ``kurtosis``, ``norm``, ``sv_max``, ``sv_min``, ``sv_mean`` (NaN for 1-D).
        weight_fan_in: For a bias, the fan-in of its layer's weight (to recognise PyTorch's bias default).

    Returns:
        The :class:`Scheme`.
    """
    if not rows:
        raise ValueError("infer_scheme needs the statistics of at least one seed")
    std = np.array([float(r["std"]) for r in rows])
    mean = np.array([float(r["mean"]) for r in rows])
    ndim = int(rows[0]["ndim"])
    numel = int(rows[0]["numel"])
    if numel == 1:
        # one value per seed: the seeds are the sample
        if len(rows) < 2 or np.all(mean == mean[0]):
            value = float(mean[0])
            if value == 0.0:
                return Scheme("zeros", 0.0, "0", 0.0, "zeros")
            return Scheme("constant", value, "", 0.0, f"constant {value:.3g}")
        spread = float(mean.std())
        return Scheme("random", spread, "", 1.0, f"random (one value, std {spread:.3g} over seeds)")
    if np.all(std == 0.0) and np.all(mean == mean[0]):
        value = float(mean.mean())
        if value == 0.0:
            return Scheme("zeros", 0.0, "0", 0.0, "zeros")
        return Scheme("constant", value, "", 0.0, f"constant {value:.3g}")
    if ndim >= 2:
        dims = [int(d) for d in str(rows[0]["shape"]).split("x")]
        out_dim, in_dim = dims[0], int(np.prod(dims[1:]))
        sv_mean = np.array([float(r["sv_mean"]) for r in rows])
        flat = (
            np.array([float(r["sv_max"]) for r in rows]) - np.array([float(r["sv_min"]) for r in rows])
        ) / np.maximum(sv_mean, 1e-30)
        if min(out_dim, in_dim) >= 2 and np.all(flat < ORTHO_FLATNESS):
            g = float(sv_mean.mean())
            name = name_gain(g, 1e-3)
            return Scheme("orthogonal", g, name, 0.0, f"orthogonal, gain {_fmt_gain(g, name)}")
        if min(out_dim, in_dim) == 1 and len(rows) >= 2:
            norms = np.array([float(r["norm"]) for r in rows])
            if (norms.max() - norms.min()) / max(norms.mean(), 1e-30) < 1e-4:
                g = float(norms.mean())
                name = name_gain(g, 1e-3)
                return Scheme(
                    "orthogonal", g, name, 0.0, f"orthogonal (unit-norm vector), gain {_fmt_gain(g, name)}"
                )
    kurt = np.array([float(r["kurtosis"]) for r in rows])
    k = float(np.nanmean(kurt))
    pooled = float(np.sqrt(np.mean(std**2)))
    n_total = numel * len(rows)
    # relative standard error of a std estimate from n draws: sqrt((kurtosis - 1) / (4 n)); 3 of them
    tol = max(0.05, 3.0 * math.sqrt(max(k - 1.0, 0.8) / (4.0 * n_total)))
    fan_in = int(rows[0]["fan_in"]) if ndim >= 2 else int(weight_fan_in or rows[0]["fan_in"])
    fan_out = int(rows[0]["fan_out"])
    uniform = k < 2.4
    if uniform:
        bound = pooled * math.sqrt(3.0)
        g_k = bound / math.sqrt(3.0 / fan_in)
        g_x = bound / math.sqrt(6.0 / (fan_in + fan_out)) if ndim >= 2 else float("nan")
    else:
        g_k = pooled * math.sqrt(fan_in)
        g_x = pooled / math.sqrt(2.0 / (fan_in + fan_out)) if ndim >= 2 else float("nan")
    shape = "uniform" if uniform else "normal"
    if ndim == 1:
        if weight_fan_in:
            # PyTorch's bias default U(±1/sqrt(fan_in)): every value inside the bound, and the largest close
            # to it (robust for the few entries of a head's bias, where moments are too noisy)
            limit = 1.0 / math.sqrt(weight_fan_in)
            reach = max(max(abs(float(r["min"])), abs(float(r["max"]))) for r in rows)
            if reach <= limit * (1 + 1e-6) and reach >= (0.5 if numel >= 4 else 0.2) * limit:
                return Scheme(
                    "torch-default", 1 / math.sqrt(3), "1/√3", 1.0, "PyTorch default bias U(±1/√fan_in)"
                )
        if numel < 30:
            return Scheme("random", pooled, "", 1.0, f"random, std {pooled:.3g}")
        spread = bound if uniform else pooled
        return Scheme(shape, spread, "", tol, f"{shape}, {'bound' if uniform else 'std'} {spread:.3g}")
    if uniform and abs(g_k - 1 / math.sqrt(3)) <= tol / math.sqrt(3):
        return Scheme(
            "torch-default", g_k, "1/√3", tol, "PyTorch default (kaiming_uniform a=√5: U(±1/√fan_in))"
        )
    name_k = name_gain(g_k, tol)
    if name_k:
        return Scheme(f"kaiming-{shape}", g_k, name_k, tol, f"Kaiming {shape}, gain {_fmt_gain(g_k, name_k)}")
    name_x = name_gain(g_x, tol) if math.isfinite(g_x) else ""
    if name_x:
        return Scheme(f"xavier-{shape}", g_x, name_x, tol, f"Xavier {shape}, gain {_fmt_gain(g_x, name_x)}")
    return Scheme(f"kaiming-{shape}", g_k, "", tol, f"{shape}, Kaiming gain {g_k:.3g} (no standard gain)")


PPO_EXPECTED: dict[str, tuple[str, float]] = {
    "hidden": ("orthogonal", math.sqrt(2.0)),
    "policy head": ("orthogonal", 0.01),
    "value head": ("orthogonal", 1.0),
    "bias": ("zeros", 0.0),
}
"""The PPO scheme (Huang et al. 2022, detail 2) by role: orthogonal √2 hidden, 0.01 policy, 1.0 value, zero bias."""


def matches_ppo(role: str, scheme: Scheme) -> bool | None:
    """Whether ``scheme`` is what the PPO details prescribe for ``role`` (None for roles they do not cover)."""
    expected = PPO_EXPECTED.get(role)
    if expected is None:
        return None
    kind, gain = expected
    if scheme.scheme != kind:
        return False
    return kind == "zeros" or abs(scheme.gain - gain) <= 0.01 * gain
