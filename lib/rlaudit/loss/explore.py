"""The variant and probe picker of 09_loss: each subject's ``compute_advantages`` (or the advantages read from
its ``compute_lambda_returns``) against one advantage estimator of :data:`rlaudit.loss.gae.VARIANTS` (the
reference GAE or a known mistake), and what each subject
learned on one probe environment of the ladder, both sides.

Top left and middle, each side's answer on a staged input (the random inputs or the impulse; advantages or
returns) against the picked variant's (computed with that side's own gamma and lambda, as ``loss/advantages``
compares them): on the diagonal where the subject computes that variant. Top right, the environment where a
side departs most from the variant, step by step, with its episode ends and truncations. Below, the picked probe
environment: each side's learned value on every probe state against its target, and the probability of the
rewarded action against the pass line. It reads the cached runs of ``loss/advantages`` and ``loss/probe-envs``;
the variants are computed once when the picker is built, so a control change only indexes prepared arrays, and
it redoes only the panels of the control that moved (the variant and input: the top row; the probe: the bottom).
The redraw is mostly text (tick labels, titles, legends), so titles sit at a fixed height, ticks are few and
one legend names the variant lines of both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.checks import SIDES
from rlaudit.explore import Explorer, choice, nothing_to_explore
from rlaudit.loss.gae import VARIANTS
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

INPUTS = {
    "random:advantages": "advantages on the random inputs",
    "random:returns": "returns on the random inputs",
    "impulse:advantages": "advantages on the impulse",
    "impulse:returns": "returns on the impulse",
}
"""The picker's staged-input options: ``"<staged input>:<quantity>"`` -> label."""
DESCRIPTIONS = {v.name: v.description for v in VARIANTS}
TITLE_Y = 1.02
"""Every panel's title at a fixed height above its axes: an automatic one is placed anew at each draw."""
TICKS = 3
"""At most this many intervals between numbered ticks: every tick label is text drawn anew at each change."""
PASS_LINE = 0.9
"""The probe ladder's pass line on the probability of the rewarded action."""


@dataclass
class SideAnswers:
    """One side's ``compute_advantages`` on the staged inputs, and how ``loss/advantages`` read it.

    Attributes:
        gamma, gae_lambda: The discount and lambda the side is compared under (declared, or solved).
        truncation: The side was given truncation flags (the truncation variants are testable).
        inputs: ``{"random" | "impulse": arrays}``: what it was given (``rewards``, ``values``, ``dones``,
            ``next_value``, ``truncated``, ``final_values``) and what it returned (``advantages``, ``returns``).
        matches: The variants it matches.
    """

    gamma: float
    gae_lambda: float
    truncation: bool
    inputs: dict[str, dict[str, np.ndarray]]
    matches: tuple[str, ...] = ()


@dataclass
class ProbeRun:
    """What one side learned on one probe environment (``loss/probe-envs``).

    Attributes:
        supported: The side could be trained on it (``train`` takes an ``env_fn``).
        passed: The ladder's verdict.
        values: (k,) the learned value on every probe state.
        probs: (k, n_actions) the learned action probabilities there.
        gamma: The side's discount (the discount probe's target is 1 + gamma).
        reason: Why it failed, or ``"learned"``.
    """

    supported: bool
    passed: bool
    values: np.ndarray
    probs: np.ndarray
    gamma: float
    reason: str


@dataclass
class LossEvidence:
    """The picker's evidence: both sides' advantages (None without them) and probe runs (``{probe: {side: run}}``)."""

    answers: dict[str, SideAnswers] | None = None
    probes: dict[str, dict[str, ProbeRun]] = field(default_factory=dict)


def probe_run(result: dict[str, Any]) -> ProbeRun:
    """A :class:`ProbeRun` from the ``probe_env_run`` probe's result."""
    gamma = result.get("gamma")
    return ProbeRun(
        supported=bool(result.get("supported", False)),
        passed=bool(result.get("passed", False)),
        values=np.asarray(result.get("values") or [], dtype=float),
        probs=np.asarray(result.get("probs") or [], dtype=float),
        gamma=float(gamma) if gamma is not None else 0.99,
        reason=str(result.get("reason") or ""),
    )


def evidence(wb: Workbench, seed: int = 0) -> LossEvidence:
    """Both sides' answers from the cached ``loss/advantages`` runs and their ``loss/probe-envs`` runs."""
    from rlaudit.loss.advantages import advantage_pairs, read_estimator
    from rlaudit.loss.ladder import ladder_runs, probe_names

    out = LossEvidence()
    random, impulse = advantage_pairs(wb, seed=seed)
    if random.ok and impulse.ok:
        out.answers = {}
        for side in SIDES:
            est = read_estimator(side, random[side], impulse[side])
            out.answers[side] = SideAnswers(
                gamma=est.gamma,
                gae_lambda=est.gae_lambda,
                truncation=est.mode == "kwargs",
                inputs={"random": est.arrays, "impulse": impulse[side].npz("advantages")},
                matches=tuple(r["variant"] for r in est.rows if r["match"]),
            )
    for name, pair in zip(probe_names(), ladder_runs(wb, seed=seed), strict=True):
        if all(pair[s].ok for s in SIDES):
            out.probes[name] = {s: probe_run(pair[s].result) for s in SIDES}
    return out


def variant_answers(side: SideAnswers) -> dict[tuple[str, str], dict[str, np.ndarray] | None]:
    """``{(variant, input): {"advantages", "returns"}}`` under the side's gamma and lambda (None: not testable,
    a truncation variant for a side given no truncation flags)."""
    out: dict[tuple[str, str], dict[str, np.ndarray] | None] = {}
    for variant in VARIANTS:
        for name, a in side.inputs.items():
            if variant.needs_truncation and not side.truncation:
                out[(variant.name, name)] = None
                continue
            trunc = (a.get("truncated"), a.get("final_values")) if side.truncation else (None, None)
            adv, ret = variant.fn(
                a["rewards"], a["values"], a["dones"], a["next_value"], side.gamma, side.gae_lambda, *trunc
            )
            out[(variant.name, name)] = {
                "advantages": np.asarray(adv, float),
                "returns": np.asarray(ret, float),
            }
    return out


def advantages_explorer(wb: Workbench, seed: int = 0) -> Any:
    """The variant and probe picker (JupyterLab: live; the report: the candidate's matched variant and its
    first failed probe environment)."""
    return variant_picker(evidence(wb, seed=seed))


def _state_labels(probe: str) -> list[str]:
    from rlaudit.loss.envs import eval_observations

    return [f"obs {float(o[0]):g}" for o in eval_observations(probe)]


def variant_picker(ev: LossEvidence | None) -> Any:
    """The explorer over the prepared evidence (see :func:`advantages_explorer`), or a line saying why there is
    none."""
    from rlaudit.loss.envs import PROBES, expected

    sides = ev.answers if ev is not None and ev.answers and set(ev.answers) == set(SIDES) else None
    probes = ev.probes if ev is not None else {}
    if sides is None and not probes:
        text = (
            "No variant or probe picker: no side's compute_advantages or compute_lambda_returns gave answers, and "
            "no probe environment ran on both sides (see loss/advantages and loss/probe-envs)."
        )
        return nothing_to_explore(text)
    computed = {side: variant_answers(sides[side]) for side in SIDES} if sides else {}
    names = [v.name for v in VARIANTS]
    start = "correct"
    if sides:
        wrong = [v for v in sides["candidate"].matches if v != "correct"] or [
            v for v in sides["baseline"].matches if v != "correct"
        ]
        start = wrong[0] if wrong else "correct"
    # prepared once per probe environment: labels, each side's values, targets and p(rewarded action)
    ladder: dict[str, dict[str, Any]] = {}
    for name, runs in probes.items():
        labels = _state_labels(name)
        entry: dict[str, Any] = {
            "labels": labels,
            "policy": "good_action" in expected(name, 0.99),
            "sides": {},
        }
        for side, run in runs.items():
            if not run.supported or run.values.size != len(labels):
                entry["sides"][side] = None
                continue
            want = expected(name, run.gamma, run.probs if run.probs.size else None)
            good = want.get("good_action")
            p_good = run.probs[np.arange(len(good)), good] if good is not None and run.probs.size else None
            entry["sides"][side] = {
                "values": run.values,
                "target": want["value"],
                "p_good": p_good,
                "run": run,
            }
        ladder[name] = entry
    first_probe = next(
        (
            n
            for n, runs in probes.items()
            if runs["baseline"].passed and runs["candidate"].supported and not runs["candidate"].passed
        ),
        next(iter(probes), None),
    )

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        from matplotlib.lines import Line2D
        from matplotlib.ticker import MaxNLocator

        grid = fig.add_gridspec(2, 7, height_ratios=[1.15, 1], hspace=0.6, wspace=1.6)
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.07, top=0.9)
        axes = [fig.add_subplot(grid[0, 0:2]), fig.add_subplot(grid[0, 2:4]), fig.add_subplot(grid[0, 4:7])]
        art: dict[str, Any] = {"axes": dict(zip(SIDES, axes[:2], strict=True)), "ax_t": axes[2]}
        art["scatter"], art["diagonal"], art["note"] = {}, {}, {}
        for side in SIDES:
            ax = art["axes"][side]
            art["scatter"][side] = ax.scatter([], [], s=8, alpha=0.6, color=SIDE_COLORS[side])
            art["diagonal"][side] = ax.plot([], [], color="black", linewidth=0.8, linestyle="--")[0]
            art["note"][side] = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center",
                                        fontsize=8, color="grey")  # fmt: skip
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(TICKS))
            ax.yaxis.set_major_locator(MaxNLocator(TICKS))
        ax_t = art["ax_t"]
        art["subject"] = {
            s: ax_t.plot([], [], color=SIDE_COLORS[s], linewidth=1.6, label=s)[0] for s in SIDES
        }
        art["variant"] = {
            s: ax_t.plot([], [], color=SIDE_COLORS[s], linestyle=":", linewidth=1.6, label="_variant")[0]
            for s in SIDES
        }
        art["ends"] = ax_t.vlines([], 0, 1, color="grey", linewidth=0.8, label="episode end")
        art["truncs"] = ax_t.vlines(
            [], 0, 1, color="#8e44ad", linestyle="--", linewidth=0.8, label="truncation"
        )
        ax_t.set_xlabel("step t")
        ax_t.grid(alpha=0.3)
        ax_t.xaxis.set_major_locator(MaxNLocator(TICKS, integer=True))
        ax_t.yaxis.set_major_locator(MaxNLocator(TICKS))
        # one dotted entry for both sides' variant lines (each in its side's colour)
        dotted = Line2D(
            [], [], color="black", linestyle=":", linewidth=1.6, label="variant (dotted; each side's γ, λ)"
        )
        handles = [
            art["subject"]["baseline"],
            art["subject"]["candidate"],
            dotted,
            art["ends"],
            art["truncs"],
        ]
        ax_t.legend(
            handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, fontsize="x-small"
        )
        art["caption"] = fig.text(0.06, 0.955, "", fontsize=9)
        if not sides:
            for ax in axes:
                ax.text(0.5, 0.5, "no advantages on both sides\n(see loss/advantages)", transform=ax.transAxes,
                        ha="center", va="center", fontsize=8, color="grey")  # fmt: skip
        # the probe environment: value per probe state against its target, p(rewarded action) against 0.9
        ax_v, ax_p = fig.add_subplot(grid[1, 0:4]), fig.add_subplot(grid[1, 4:7])
        art["ax_v"], art["ax_p"] = ax_v, ax_p
        art["v_bars"], art["p_bars"], art["targets"] = {}, {}, {}
        for i, side in enumerate(SIDES):
            offset = (i - 0.5) * 0.38
            art["v_bars"][side] = ax_v.bar(
                [offset, 1 + offset], [0, 0], 0.36, color=SIDE_COLORS[side], label=side
            )
            art["p_bars"][side] = ax_p.bar(
                [offset, 1 + offset], [0, 0], 0.36, color=SIDE_COLORS[side], label=side
            )
            art["targets"][side] = ax_v.plot([], [], "_", color="black", markersize=22, markeredgewidth=2.2,
                                             label="target" if side == "baseline" else None)[0]  # fmt: skip
        ax_v.axhline(0, color="black", linewidth=0.6)
        ax_v.set_ylabel("learned value V(s)")
        ax_v.grid(alpha=0.3, axis="y")
        ax_v.yaxis.set_major_locator(MaxNLocator(TICKS))
        ax_v.legend(loc="upper right", fontsize="x-small")  # a fixed place: "best" is searched at every draw
        # the pass line is named by its tick and the title (the bars' colours are the legend's on the left)
        art["pass_line"] = ax_p.axhline(PASS_LINE, color="#2ca02c", linestyle=":", linewidth=1.2)
        ax_p.set_ylim(0, 1.05)
        ax_p.set_yticks([0.0, 0.5, PASS_LINE])
        ax_p.set_ylabel("p(rewarded action)")
        ax_p.set_title(
            f"the rewarded action's probability (pass: {PASS_LINE:g}, dotted)", fontsize="small", y=TITLE_Y
        )
        ax_p.grid(alpha=0.3, axis="y")
        art["p_note"] = ax_p.text(0.5, 0.5, "", transform=ax_p.transAxes, ha="center", va="center",
                                  fontsize=8, color="grey")  # fmt: skip
        art["v_note"] = ax_v.text(0.5, 0.5, "", transform=ax_v.transAxes, ha="center", va="center",
                                  fontsize=8, color="grey")  # fmt: skip
        if not probes:
            art["v_note"].set_text("no probe environment ran on both sides (see loss/probe-envs)")
        return art

    def update_variant(art: dict[str, Any], values: dict[str, Any]) -> None:
        assert sides is not None
        variant = values["variant"]
        source, quantity = values["input"].split(":")
        column_err: dict[str, np.ndarray] = {}
        for side in SIDES:
            ax = art["axes"][side]
            theirs = sides[side].inputs[source][quantity].astype(float)
            ref = computed[side][(variant, source)]
            if ref is None:
                art["scatter"][side].set_offsets(np.empty((0, 2)))
                art["diagonal"][side].set_data([], [])
                art["note"][side].set_text("not testable: this side's\nestimator gets\nno truncation flags")
                ax.set_title(f"{side}: not testable", fontsize="small", color="black", y=TITLE_Y)
                continue
            want = ref[quantity]
            art["note"][side].set_text("")
            art["scatter"][side].set_offsets(np.column_stack([want.reshape(-1), theirs.reshape(-1)]))
            both = np.concatenate([want.reshape(-1), theirs.reshape(-1)])
            lo, hi = float(both.min()), float(both.max())
            pad = 0.05 * (hi - lo) or 0.05
            art["diagonal"][side].set_data([lo - pad, hi + pad], [lo - pad, hi + pad])
            ax.set_xlim(lo - pad, hi + pad)
            ax.set_ylim(lo - pad, hi + pad)
            diff = np.abs(theirs - want)
            column_err[side] = diff.max(axis=0)
            worst = float(diff.max())
            same = worst <= 1e-4 * max(1.0, float(np.abs(want).max()))
            ax.set_title(
                f"{side}: {'matches' if same else 'differs'} (max |diff| {worst:.3g})",
                fontsize="small",
                color="black" if same else "#c0392b",
                y=TITLE_Y,
            )
            ax.set_xlabel(f"{variant}: {quantity}")
            ax.set_ylabel(f"the {side}'s {quantity}")
        # the environment (column) where either side departs most from the variant
        errs = list(column_err.values())
        col = int(np.argmax(np.max(np.vstack(errs), axis=0))) if errs else 0
        ax_t = art["ax_t"]
        ys = []
        for side in SIDES:
            theirs = sides[side].inputs[source][quantity][:, col].astype(float)
            steps = np.arange(len(theirs))
            art["subject"][side].set_data(steps, theirs)
            ys.append(theirs)
            ref = computed[side][(variant, source)]
            if ref is None:
                art["variant"][side].set_data([], [])
            else:
                art["variant"][side].set_data(steps, ref[quantity][:, col])
                ys.append(ref[quantity][:, col])
        arrays = sides["baseline"].inputs[source]
        allv = np.concatenate(ys)
        lo, hi = float(allv.min()), float(allv.max())
        pad = 0.05 * (hi - lo) or 0.05
        truncated = np.asarray(arrays.get("truncated", np.zeros_like(arrays["dones"])), bool)[:, col]
        dones = np.asarray(arrays["dones"], bool)[:, col] & ~truncated
        art["ends"].set_segments([[(t, lo - pad), (t, hi + pad)] for t in np.flatnonzero(dones)])
        art["truncs"].set_segments([[(t, lo - pad), (t, hi + pad)] for t in np.flatnonzero(truncated)])
        ax_t.set_xlim(-0.5, len(arrays["dones"]) - 0.5)
        ax_t.set_ylim(lo - pad, hi + pad)
        ax_t.set_ylabel(quantity)
        ax_t.set_title(
            f"environment {col} (the largest difference)\n{INPUTS[values['input']]}",
            fontsize="small",
            y=TITLE_Y,
        )
        art["caption"].set_text(f"{variant}: {DESCRIPTIONS[variant]}")

    def update_probe(art: dict[str, Any], values: dict[str, Any]) -> None:
        name = values["probe"]
        entry = ladder[name]
        k = len(entry["labels"])
        ax_v, ax_p = art["ax_v"], art["ax_p"]
        ys = [0.0]
        verdicts = []
        for i, side in enumerate(SIDES):
            got = entry["sides"].get(side)
            offset = (i - 0.5) * 0.38
            for j, (v_bar, p_bar) in enumerate(zip(art["v_bars"][side], art["p_bars"][side], strict=True)):
                shown = got is not None and j < k
                v_bar.set_visible(shown)
                v_bar.set_height(float(got["values"][j]) if shown else 0.0)
                has_p = shown and got["p_good"] is not None
                p_bar.set_visible(has_p)
                p_bar.set_height(float(got["p_good"][j]) if has_p else 0.0)
            if got is None:
                art["targets"][side].set_data([], [])
                verdicts.append(f"{side}: not run")
                continue
            art["targets"][side].set_data(np.arange(k) + offset, got["target"])
            ys.extend(got["values"].tolist() + got["target"].tolist())
            run = got["run"]
            verdicts.append(f"{side}: {'pass' if run.passed else 'FAIL (' + run.reason + ')'}")
        ax_v.set_xticks(range(k), entry["labels"])
        ax_p.set_xticks(range(k), entry["labels"])
        ax_v.set_xlim(-0.6, k - 0.4)
        ax_p.set_xlim(-0.6, k - 0.4)
        lo, hi = min(ys), max(ys)
        pad = 0.1 * (hi - lo) or 0.1
        ax_v.set_ylim(lo - pad, hi + pad)
        spec = PROBES[name]
        failed = any(v.startswith(("baseline: FAIL", "candidate: FAIL")) for v in verdicts)
        ax_v.set_title(
            f"probe {spec.index}. {name} (a failure isolates {spec.isolates})\n" + "; ".join(verdicts),
            fontsize="small",
            color="#c0392b" if failed else "black",
            y=TITLE_Y,
        )
        art["p_note"].set_text("" if entry["policy"] else "no action to learn on this rung")
        art["pass_line"].set_visible(entry["policy"])

    def update(art: dict[str, Any], values: dict[str, Any]) -> None:
        # a panel is redone only when its own controls moved (the other keeps its artists as they are)
        shown = art.setdefault("shown", {})
        if sides and shown.get("variant") != (values["variant"], values["input"]):
            update_variant(art, values)
            shown["variant"] = (values["variant"], values["input"])
        if probes and shown.get("probe") != values["probe"]:
            update_probe(art, values)
            shown["probe"] = values["probe"]

    controls = []
    if sides:
        controls += [
            choice("variant", names, value=start, label="variant"),
            choice("input", [(label, key) for key, label in INPUTS.items()], label="input and quantity"),
        ]
    if probes:
        options = [(f"{PROBES[n].index}. {n}", n) for n in probes]
        controls.append(choice("probe", options, value=first_probe, label="probe environment"))
    return Explorer(
        title="Variant and probe picker: each side's advantages against an estimator, and the probe environments",
        controls=controls,
        setup=setup,
        update=update,
        figsize=(11.0, 7.6),
    )


__all__ = [
    "INPUTS", "LossEvidence", "ProbeRun", "SideAnswers", "advantages_explorer", "evidence", "probe_run",
    "variant_answers", "variant_picker",
]  # fmt: skip
