"""pytest settings for these notebooks under nbval (``pytest --nbval-lax notebooks``, as ``make test`` runs them).

nbval starts a kernel per notebook, and a kernel can die as it starts: another kernel starting at the same
moment (a report's lanes, a parallel test) took a port jupyter_client had picked for it. The notebook then
failed before any cell ran. Here nbval's kernel start is tried again with a new kernel, as the report's lanes
do (:func:`rlaudit.report.execution.retry_kernel_start`).
"""

from __future__ import annotations

import pytest

from rlaudit.report.execution import retry_kernel_start


def pytest_configure(config: pytest.Config) -> None:
    try:
        import nbval.kernel
    except ImportError:  # pytest without nbval: it runs no notebook here
        return
    if not hasattr(nbval.kernel.start_new_kernel, "__wrapped__"):
        nbval.kernel.start_new_kernel = retry_kernel_start(nbval.kernel.start_new_kernel)
