"""``rlaudit new-subject DIR``: write the subject template (every capability, commented out) into DIR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlaudit.engine.paths import PACKAGE_DIR

TEMPLATE_PATH = PACKAGE_DIR / "templates" / "subject_template.py"


def template_text() -> str:
    """The text of the subject template (``rlaudit/templates/subject_template.py``)."""
    return TEMPLATE_PATH.read_text(encoding="utf-8")


def write_subject_template(directory: str | Path, *, force: bool = False) -> Path:
    """Write ``subject.py`` into ``directory`` (created if needed).

    Args:
        directory: Where the subject file goes (normally beside the user's trainer).
        force: Overwrite an existing ``subject.py``.

    Returns:
        The path written.

    Raises:
        ValueError: ``subject.py`` already exists and ``force`` is False, or ``directory`` is a file.
    """
    directory = Path(directory).expanduser()
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} is a file; expected a directory to write subject.py into")
    target = directory / "subject.py"
    if target.exists() and not force:
        raise ValueError(
            f"{target} already exists; rlaudit will not overwrite it. Pass --force to replace it with the "
            "template, or write the template elsewhere and copy what you need"
        )
    directory.mkdir(parents=True, exist_ok=True)
    target.write_text(template_text(), encoding="utf-8")
    return target


def run_new_subject(args: Any) -> int:
    """``rlaudit new-subject DIR [--force]``; returns the exit code (bad input raises ValueError)."""
    target = write_subject_template(args.dir, force=bool(getattr(args, "force", False)))
    print(
        f"wrote {target}\n"
        "Uncomment the capabilities your trainer has (start with config and train), check it imports with\n"
        f"  python -c 'import runpy; runpy.run_path(\"{target}\")'\n"
        "then compare two versions:\n"
        f"  make report BASELINE=path/to/old/subject.py CANDIDATE={target}\n"
        "The table at the top of the file says which notebook reads which capability. A trainer that pins its\n"
        "own packages (gymnasium==0.29.1, ...) gets them through a pair file (PAIR=pair.yaml) whose sides name\n"
        "requirements: and system_site_packages: true (see the README, 'Two environments')."
    )
    return 0
