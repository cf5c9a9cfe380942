"""``rlaudit train SPEC --steps N --seed S --out DIR``: train one subject with the recorder.

Runs the subject's ``train`` in this process (re-executing under the subject's own interpreter when it names
one), with a :class:`rlaudit.recorder.Recorder` writing its tables to ``DIR`` and a progress bar fed by the
steps the trainer logs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def _progress_recorder(run_dir: Path, total: int):  # -> Recorder with a tqdm bar
    from tqdm.auto import tqdm

    from rlaudit.recorder import Recorder

    class ProgressRecorder(Recorder):
        """A Recorder that also moves a progress bar to each logged step."""

        def __init__(self) -> None:
            super().__init__(run_dir)
            self.bar = tqdm(total=total, unit="step", unit_scale=True, desc="train", dynamic_ncols=True)

        def log(self, step: int, **scalars: float) -> None:
            super().log(step, **scalars)
            self.bar.update(max(0, min(step, total) - self.bar.n))
            shown = {
                k.rsplit("/", 1)[-1]: f"{v:.3g}"
                for k, v in scalars.items()
                if k in ("env/heart.get", "perf/sps", "charts/episodic_return")
            }
            if shown:
                self.bar.set_postfix(shown, refresh=False)

        def close(self) -> None:
            super().close()
            self.bar.close()

    return ProgressRecorder()


def run_train(args: argparse.Namespace) -> int:
    from rlaudit.engine.subjects import capabilities, load_subject, parse_spec

    spec = parse_spec(args.spec)
    if (
        spec.python
        and Path(spec.python).resolve() != Path(sys.executable).resolve()
        and not os.environ.get("RLAUDIT_TRAIN_REEXEC")
    ):
        # The subject has its own interpreter: run this command there (rlaudit via PYTHONPATH).
        from rlaudit.engine.paths import LIB_DIR

        env = {
            **os.environ,
            **spec.env,
            "RLAUDIT_TRAIN_REEXEC": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(LIB_DIR), os.environ.get("PYTHONPATH")])),
        }
        os.execve(spec.python, [spec.python, "-m", "rlaudit.cli", *sys.argv[1:]], env)
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    subject = load_subject(spec)
    missing = {"config", "train"} - capabilities(subject)
    if missing:
        raise ValueError(f"subject {spec} cannot be trained: it lacks {', '.join(sorted(missing))}")
    config = subject.config()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recorder = _progress_recorder(out, args.steps)
    kwargs: dict[str, Any] = {"resume_from": args.resume} if args.resume else {}
    try:
        summary = subject.train(config, args.steps, args.seed, recorder, **kwargs)
    finally:
        recorder.close()
    from rlaudit.findings import jsonable

    print(json.dumps(jsonable(summary or {}), indent=2))
    print(f"recorder tables and logs in {out}", file=sys.stderr)
    return 0
