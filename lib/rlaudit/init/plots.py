"""Init figures: per-layer weight std side by side, singular-value spectra overlaid (built without pyplot)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.trainer.plots import panels

COLORS = {"baseline": "#4C72B0", "candidate": "#DD8452"}


def std_figure(table: pd.DataFrame) -> Any:
    """Bars per parameter: std at init (mean over seeds), baseline vs candidate, log scale.

    Args:
        table: :func:`rlaudit.init.layer_schemes.compare_init` (columns parameter, candidate, std b, std c).
    """
    import seaborn as sns
    from matplotlib.figure import Figure

    rows = []
    for r in table.to_dict("records"):
        label = r["parameter"] if r["parameter"] != "—" else r["candidate"]
        for side, col in (("baseline", "std b"), ("candidate", "std c")):
            value = r.get(col)
            if value is not None and np.isfinite(value):
                # zero biases have std 0: drawn at a floor so they stay visible on the log axis
                rows.append({"parameter": label, "side": side, "std": max(float(value), 1e-6)})
    df = pd.DataFrame(rows)
    fig = Figure(figsize=(max(6.0, 0.5 * table.shape[0] + 2), 3.8), layout="constrained")
    ax = fig.subplots()
    if not df.empty:
        sns.barplot(data=df, x="parameter", y="std", hue="side", palette=COLORS, ax=ax)
    ax.set_yscale("log")
    ax.set_ylabel("std at init (1e-6 = zero)")
    ax.set_xlabel("")
    ax.tick_params(axis="x", rotation=60)
    ax.set_title("Per-parameter std at initialization")
    return fig


def spectra_figure(
    sv_a: Mapping[str, np.ndarray], sv_b: Mapping[str, np.ndarray], table: pd.DataFrame
) -> Any:
    """One panel per weight matrix: singular values (descending) of every seed, both sides overlaid.

    Args:
        sv_a: Baseline ``singular.npz`` (``"<seed>|<name>"`` -> values).
        sv_b: Candidate ``singular.npz``.
        table: :func:`rlaudit.init.layer_schemes.compare_init` rows (to pair parameter names across sides).
    """
    pairs = [
        (r["parameter"], r["candidate"])
        for r in table.to_dict("records")
        if (r["parameter"] != "—" and r["parameter"].endswith("weight"))
        or (r["candidate"] != "—" and r["candidate"].endswith("weight"))
    ]
    pairs = [
        p
        for p in pairs
        if any(k.endswith("|" + p[0]) for k in sv_a) or any(k.endswith("|" + p[1]) for k in sv_b)
    ]
    fig, axes = panels(len(pairs))
    for ax, (na, nb) in zip(axes, pairs, strict=True):
        for side, store, name, style in (("baseline", sv_a, na, "-"), ("candidate", sv_b, nb, "--")):
            first = True
            for key, values in store.items():
                if key.split("|", 1)[1] != name:
                    continue
                v = np.asarray(values)
                ax.plot(
                    np.arange(1, len(v) + 1),
                    v,
                    style,
                    color=COLORS[side],
                    alpha=0.7,
                    marker="." if len(v) < 3 else None,
                    label=side if first else None,
                )
                first = False
        # from zero: a flat (orthogonal) spectrum must look flat, not magnified into noise by an offset axis
        top = max(
            (
                float(np.max(v))
                for k, v in [*sv_a.items(), *sv_b.items()]
                if k.split("|", 1)[1] in (na, nb) and np.size(v)
            ),
            default=1.0,
        )
        ax.set_ylim(0.0, top * 1.15 if top > 0 else 1.0)
        ax.set_title(na if na == nb or nb == "—" else f"{na} | {nb}", fontsize=9)
        ax.set_xlabel("index")
        ax.set_ylabel("singular value")
        ax.legend(fontsize=7)
    fig.suptitle("Singular-value spectra at init (every seed; flat = orthogonal)")
    return fig
