"""Logging audit (notebook 03): which scalars the logs hold, whether the logged episode statistics are what
happened, and how often and at what cost each side logs.

This package is ``rlaudit.logging``. It never shadows the standard library: rlaudit modules use absolute
imports (``import logging`` is always the stdlib's ``logging``), and nothing here is importable as a
top-level ``logging``.
"""

from __future__ import annotations

if __name__ == "logging":
    # Imported as the top-level ``logging``: a script was run from inside lib/rlaudit, which put this directory
    # first on sys.path. Load the standard library's logging in our place so nothing else breaks.
    import importlib.util as _util
    import os as _os
    import sys as _sys
    import sysconfig as _sysconfig

    _dir = _os.path.join(_sysconfig.get_paths()["stdlib"], "logging")
    _spec = _util.spec_from_file_location(
        "logging", _os.path.join(_dir, "__init__.py"), submodule_search_locations=[_dir]
    )
    _real = _util.module_from_spec(_spec)  # type: ignore[arg-type]
    _sys.modules["logging"] = _real
    _spec.loader.exec_module(_real)  # type: ignore[union-attr]


def audit_all(wb):
    from rlaudit.logging.audit import audit_all as _audit_all

    return _audit_all(wb)
