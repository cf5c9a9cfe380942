"""The Ray backend: one Ray task per job on a cluster, results back as artifacts in the shared cache
(``docs/RAY.md``). Connecting checks that the cluster is reachable, that its nodes see the same cache path,
and says what to do when they do not; a task whose worker or node dies is retried, then reported."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import os
import socket
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rlaudit.engine.backends import Backend, _Failure, _run_captured

RAY_INSTALL_HINT = "pip install 'rlaudit[ray]'"
RAY_GCS_PORT = 6379  # the port `ray start --head` listens on unless told otherwise
RAY_CLIENT_PORT = 10001  # the Ray Client server (ray://) that `ray start --head` runs
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RLAUDIT_TORCH_THREADS")


class RaySetupError(ValueError):
    """Ray cannot be used as configured: not installed, cluster unreachable, or a node set up differently.

    A ``ValueError`` because it is a setup problem the user fixes (``rlaudit`` prints it without a traceback).
    """


class SharedPathError(RaySetupError):
    """The artifact cache is not one directory that every Ray node sees at the same path."""


class RemoteTaskLost(RuntimeError):
    """A job whose Ray task returned nothing: its worker process or node died, or the cluster killed it.

    Attributes:
        kind: ``"crash"`` (the worker process or its node died, or the task was cancelled), ``"oom"`` (killed
            by the cluster's memory monitor), ``"import"`` (the node's Python environment cannot load the job)
            or ``"exception"``; the words of :class:`rlaudit.engine.worker.ProbeError`, so the workbench reports the
            job as a failed probe of that kind.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[Any, ...]:
        return (RemoteTaskLost, (self.kind, str(self)))


def _node_label() -> str:
    return socket.gethostname()


def _not_shared_message(root: str, nodes: Iterable[str]) -> str:
    return (
        f"the artifact cache {root} does not exist on Ray node(s) {', '.join(sorted(nodes))}: with "
        "--executor ray the cache must be one shared directory (NFS or similar) mounted at the same path on "
        "every node, because jobs write their artifacts there and this process reads them back; point "
        "RLAUDIT_CACHE at such a path (see docs/RAY.md)"
    )


def _ray_task(fn: Callable[[Any], Any], item: Any, cache_root: str | None, threads: int) -> Any:
    """The body of every Ray task, on whichever node Ray chose: ``fn(item)`` with exceptions captured.

    The job gets ``threads`` torch/OpenMP threads (the CPUs Ray reserved for it); a probe job's worker
    process inherits them through the environment. A job that writes to a cache directory this node does
    not have fails here instead of writing artifacts nobody else can see.
    """
    value = str(threads)
    for name in _THREAD_VARIABLES:
        os.environ[name] = value
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.set_num_threads(threads)
    if cache_root and not os.path.isdir(cache_root):
        return _Failure(SharedPathError(_not_shared_message(cache_root, [_node_label()])), "")
    return _run_captured(fn, item)


def _check_node(root: str, marker: str, token: str) -> dict[str, Any]:
    """Runs on one node: does it see ``root``, and in it the marker file the notebook just wrote?"""
    path = Path(root) / marker
    try:
        same = path.read_text() == token
    except OSError:
        same = False
    return {"node": _node_label(), "exists": os.path.isdir(root), "same": same}


def shared_path_problems(root: str, answers: dict[str, dict[str, Any]]) -> list[str]:
    """What is wrong with ``root`` as a shared cache, given each node's answer to the check.

    Args:
        root: The cache directory.
        answers: Node label -> ``{"exists": bool, "same": bool}`` (from :func:`_check_node`) or
            ``{"error": message}`` when the check task itself failed there.

    Returns:
        One sentence per problem; empty when every node that answered sees the same directory.
    """
    problems = []
    missing = [node for node, a in answers.items() if "error" not in a and not a.get("exists")]
    if missing:
        problems.append(_not_shared_message(root, missing))
    other = [
        node for node, a in answers.items() if "error" not in a and a.get("exists") and not a.get("same")
    ]
    if other:
        problems.append(
            f"Ray node(s) {', '.join(sorted(other))} have a directory {root}, but not the one this process "
            "writes to (a marker file written here is not there): the cache must be one shared directory "
            "mounted at the same path on every node, not a local copy"
        )
    broken = {node: a["error"] for node, a in answers.items() if "error" in a}
    for node, error in sorted(broken.items()):
        problems.append(
            f"Ray node {node} could not run rlaudit's check ({error}); every node needs ray and rlaudit "
            f"importable in the Python environment its Ray workers use ({RAY_INSTALL_HINT})"
        )
    return problems


def _first_lines(text: Any, limit: int = 400) -> str:
    """The start of a (Ray) error message on one line, without its final full stop."""
    text = " ".join(line.strip() for line in str(text).strip().splitlines()[:4] if line.strip())
    return text.rstrip(".") if len(text) <= limit else text[: limit - 3] + "..."


def _ray_failure(exc: BaseException, retries: int) -> RemoteTaskLost:
    """Describe why a Ray task returned no value, as a :class:`RemoteTaskLost` with a ProbeError kind."""
    try:
        import ray.exceptions as rex
    except ImportError:  # pragma: no cover - ray was importable when the task was submitted
        rex = None

    def kinds(*names: str) -> tuple[type, ...]:
        return tuple(t for n in names if isinstance(t := getattr(rex, n, None), type))

    name = type(exc).__name__
    detail = _first_lines(exc)
    tried = f" (Ray re-runs such a job up to {retries} time{'s' if retries != 1 else ''})" if retries else ""
    cause = getattr(exc, "cause", None)
    if isinstance(exc, kinds("OutOfMemoryError")):
        return RemoteTaskLost(
            "oom",
            f"Ray's memory monitor killed the worker running this job because its node ran out of memory"
            f"{tried}; give the nodes more memory or run fewer jobs per node (a larger num_cpus_per_task). {name}: "
            f"{detail}",
        )
    if isinstance(exc, ImportError) or isinstance(cause, ImportError) or "No module named" in str(exc):
        return RemoteTaskLost(
            "import",
            f"a Ray node could not load this job: {detail}. Every node needs ray and rlaudit importable in the "
            f"Python environment its Ray workers use ({RAY_INSTALL_HINT}), and the subject's code at the same "
            "paths as here",
        )
    if isinstance(exc, kinds("TaskCancelledError")):
        return RemoteTaskLost("crash", f"the Ray task running this job was cancelled. {name}: {detail}")
    if isinstance(exc, kinds("RayTaskError")):
        return RemoteTaskLost("exception", f"the Ray task running this job raised {name}: {detail}")
    return RemoteTaskLost(
        "crash",
        f"the Ray worker running this job, or its node, died before the job finished{tried}: {name}: {detail}",
    )


class _RaySession:
    """The process's one Ray connection, shared by every :class:`RayBackend` (``ray.init`` is process-wide).

    Attributes:
        users: Backends holding the connection.
        address: The address it was made with (None: someone else called ``ray.init``).
        started_local: True when ``ray.init`` started a private cluster in this process (stopped with the
            last backend); connections to an existing cluster stay open for the next backend.
    """

    lock = threading.Lock()
    users = 0
    address: str | None = None
    names: frozenset[str] = frozenset()  # the addresses known to reach the connected cluster
    started_local = False

    @classmethod
    def reset(cls) -> None:
        cls.users, cls.address, cls.names, cls.started_local = 0, None, frozenset(), False


def _local_hosts() -> set[str]:
    hosts = {"127.0.0.1", "localhost", "::1", "0.0.0.0", socket.gethostname()}
    with contextlib.suppress(OSError):
        hosts.add(socket.gethostbyname(socket.gethostname()))
    return hosts


def _same_cluster(target: str, names: Iterable[str]) -> bool:
    """Does ``target`` (host:port or ray://host:port) name one of the connected cluster's addresses?

    Ray rewrites ``127.0.0.1`` to the machine's own IP, so two local spellings of one port count as equal.
    """
    client = target.startswith("ray://")
    host, port = _split_address(target.removeprefix("ray://"), RAY_CLIENT_PORT if client else RAY_GCS_PORT)
    local = _local_hosts()
    for name in names:
        if name.startswith("ray://") != client:
            continue
        other_host, other_port = _split_address(name.removeprefix("ray://"), port)
        if other_port == port and (other_host == host or (other_host in local and host in local)):
            return True
    return False


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RaySetupError(
            f"executor backend 'ray' (--executor ray, or RLAUDIT_EXECUTOR=ray) needs the ray package, which "
            f"{sys.executable} cannot import ({exc}): {RAY_INSTALL_HINT}, or run with --executor local (the "
            "default)"
        ) from exc
    return ray


def _split_address(address: str, default_port: int) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return address.strip("[]"), default_port
    return host.strip("[]"), int(port)


def _connect_hint(address: str) -> str:
    return f"executor backend 'ray' (--executor ray --ray-address {address}) could not reach a Ray cluster"


def _setup_advice() -> str:
    return (
        "Start a cluster on the head machine with `ray start --head` (then use --ray-address auto there, or "
        f"<head-ip>:{RAY_GCS_PORT} from elsewhere), or use --ray-address local for a private cluster in this "
        "process. If the cluster uses token authentication, set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN here. "
        f"Every node needs ray and rlaudit in its Python environment ({RAY_INSTALL_HINT}); see docs/RAY.md"
    )


def _probe_port(address: str, host: str, port: int, timeout: float, what: str) -> None:
    """Fail fast when nothing listens at ``host:port`` (``ray.init`` would retry for minutes)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as exc:
        raise RaySetupError(
            f"{_connect_hint(address)}: tried {what} at {host}:{port}, which did not accept a connection within "
            f"{timeout:g} s ({type(exc).__name__}: {exc}). {_setup_advice()}"
        ) from exc


def _resolve_address(address: str, timeout: float) -> str:
    """Check that the cluster named by ``address`` answers; returns what to pass to ``ray.init``.

    Raises:
        RaySetupError: No cluster found (``auto``) or nothing listening at the address.
    """
    if address == "local":
        return address
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address
        except ImportError:  # a private helper: without it, leave the search to ray.init
            return address
        env_address = os.environ.get("RAY_ADDRESS", "")
        try:
            found = canonicalize_bootstrap_address("auto")
        except Exception as exc:
            tried = (
                f"RAY_ADDRESS={env_address}"
                if env_address
                else "RAY_ADDRESS (not set), /tmp/ray/ray_current_cluster (written by `ray start --head` on "
                "this machine) and running Ray processes on this machine"
            )
            raise RaySetupError(
                f"{_connect_hint(address)}: tried {tried}, and found none ({_first_lines(exc)}). {_setup_advice()}"
            ) from exc
        if found:
            host, port = _split_address(found, RAY_GCS_PORT)
            _probe_port(address, host, port, timeout, f"the cluster found by 'auto' ({found})")
        return address
    if address.startswith("ray://"):
        host, port = _split_address(address[len("ray://") :], RAY_CLIENT_PORT)
        _probe_port(address, host, port, timeout, "the Ray Client server")
        return f"ray://{host}:{port}"
    host, port = _split_address(address, RAY_GCS_PORT)
    _probe_port(address, host, port, timeout, "the cluster's head (GCS)")
    return f"{host}:{port}"


def _ray_acquire(address: str, *, cpus: int, timeout: float, init_options: dict[str, Any]) -> Any:
    """Connect this process to Ray (or join its existing connection); returns the ``ray`` module."""
    ray = _import_ray()
    target = _resolve_address(address, timeout)
    session = _RaySession
    with session.lock:
        if not ray.is_initialized() and (session.users or session.address or session.started_local):
            session.reset()  # someone called ray.shutdown() under us
        if ray.is_initialized():
            connected = session.address is not None or session.started_local
            if not connected:
                pass  # connected by the user (their own ray.init): use it as it is
            elif address == "local" and not session.started_local:
                raise RaySetupError(
                    f"executor backend 'ray' was asked to start a private cluster (--ray-address local), but "
                    f"this process is already connected to the Ray cluster at {session.address}, and Ray allows "
                    "one cluster per process: use the same --ray-address, or restart the kernel"
                )
            elif address not in ("auto", "local") and not _same_cluster(target, session.names):
                where = (
                    "its own private cluster"
                    if session.started_local
                    else f"the cluster at {session.address}"
                )
                raise RaySetupError(
                    f"executor backend 'ray' was asked for the Ray cluster at {address}, but this process is "
                    f"already connected to {where}, and Ray allows one cluster per process: use the same "
                    "--ray-address, or restart the kernel"
                )
            session.users += 1
            return ray
        # Quiet: Ray's INFO lines ("Connecting to existing Ray cluster...") would land in every notebook.
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING, **init_options}
        if target == "local":
            options.setdefault("num_cpus", cpus)
            options.setdefault("include_dashboard", False)
        try:
            ray.init(address=target, **options)
        except Exception as exc:
            if target == "local":
                raise RaySetupError(
                    f"executor backend 'ray' could not start a private Ray cluster (--ray-address local, "
                    f"ray.init(num_cpus={options.get('num_cpus')})): {type(exc).__name__}: {_first_lines(exc)}. "
                    "Ray's raylet gives its agents 15 s to start (ray-project/ray#65983), which a busy machine "
                    "can miss: try again when it is less loaded, or start a cluster yourself with "
                    "`ray start --head` and use --ray-address auto. Details are in the raylet logs under "
                    f"{options.get('_temp_dir') or '/tmp/ray'}/session_latest/logs"
                ) from exc
            raise RaySetupError(
                f"{_connect_hint(address)}: ray.init(address={target!r}) failed with {type(exc).__name__}: "
                f"{_first_lines(exc)}. A version mismatch needs the same ray and Python versions here as on "
                f"the cluster. {_setup_advice()}"
            ) from exc
        names = {target}
        with contextlib.suppress(Exception):  # the GCS address Ray actually uses (not in client mode)
            names.add(str(ray.get_runtime_context().gcs_address))
        session.users = 1
        session.started_local = target == "local"
        session.address = None if session.started_local else target
        session.names = frozenset(names - {"local", "auto"})
        return ray


def _ray_release() -> None:
    """A backend is done: stop the private cluster with the last user; leave other connections open."""
    session = _RaySession
    with session.lock:
        session.users = max(0, session.users - 1)
        if session.users or not session.started_local:
            return
        session.reset()
        import ray

        ray.shutdown()


class _RayFuture(cf.Future):  # type: ignore[type-arg]
    """A ``concurrent.futures.Future`` for one Ray task; cancelling it cancels the task on the cluster."""

    def __init__(self, ray: Any, ref: Any) -> None:
        super().__init__()
        self._ray = ray
        self.ref = ref

    def cancel(self) -> bool:
        if self.done():
            return False
        # force=True kills the Ray worker; a probe's own worker process follows its parent out.
        with contextlib.suppress(Exception):
            self._ray.cancel(self.ref, force=True)
        return super().cancel()


class RayBackend(Backend):
    """Jobs as Ray tasks on a cluster: one task per job (a training run or a probe call).

    The workbench ships each probe call as a picklable :class:`rlaudit.engine.jobs.ProbeJob`; the task runs
    :func:`rlaudit.engine.jobs.run_probe_job` on a node, which starts the subject's own worker process with
    the subject's interpreter (so subjects with their own virtualenvs work as they do locally) and commits the
    artifacts to the cache. So the cache must be one shared directory at the same path on every node, the
    subject's code and interpreter must be at the same paths there, and every node needs ray and rlaudit
    importable. Before the first job that carries a ``cache_root``, every node is asked whether it sees the
    same directory (a marker file written here); each task checks again on its node.

    A task whose worker or node dies (crash, out of memory, node lost) is re-run ``max_retries`` times (the
    cache makes that safe), then comes back as a :class:`RemoteTaskLost` in its slot, never aborting the batch.

    Args:
        jobs: For ``address="local"``, the private cluster gets ``jobs * num_cpus_per_task`` CPUs (so ``jobs``
            tasks run at once, as with the local backends); on an existing cluster Ray decides from its CPUs.
        address: ``"auto"`` (the cluster that ``ray start --head`` started on this machine, or ``RAY_ADDRESS``),
            ``"local"`` (start a private cluster in this process; :meth:`shutdown` stops it), ``"host:port"``
            (a head node; port 6379 when left out) or ``"ray://host:port"`` (Ray Client; port 10001).
        num_cpus_per_task: CPUs Ray reserves per job; the job runs torch/OpenMP on that many threads (at least 1).
        max_retries: Re-runs of a job whose worker or node died.
        connect_timeout: Seconds the cluster's port may take to accept a connection.
        check_shared: Check the cache directory on every node before the first probe job (see above).
        check_timeout: Seconds to wait for every node's answer to that check (silent nodes are not blamed).
        init_options: More keyword arguments for ``ray.init`` (``runtime_env``, ``namespace``, ...).
        options: Ignored (kept in :attr:`options`).

    Raises:
        RaySetupError: ray is not installed, no cluster answers at ``address``, or this process is already
            connected to another cluster. The message says what was tried and how to start a cluster.
    """

    name = "ray"
    shares_memory = False

    def __init__(
        self,
        jobs: int = 2,
        *,
        address: str = "auto",
        num_cpus_per_task: float = 1,
        max_retries: int = 1,
        connect_timeout: float = 10.0,
        check_shared: bool = True,
        check_timeout: float = 120.0,
        init_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(jobs, **options)
        if not num_cpus_per_task > 0:
            raise ValueError(f"num_cpus_per_task must be positive, got {num_cpus_per_task}")
        self.address = (address or "auto").strip()
        self.num_cpus_per_task = num_cpus_per_task
        self.threads = max(1, int(num_cpus_per_task))
        self.max_retries = int(max_retries)
        self.check_shared_paths = bool(check_shared)
        self.check_timeout = float(check_timeout)
        local_cpus = max(1, round(max(1, jobs) * num_cpus_per_task))
        self._ray = _ray_acquire(
            self.address,
            cpus=local_cpus,
            timeout=float(connect_timeout),
            init_options=dict(init_options or {}),
        )
        self._released = False
        self._lock = threading.Lock()
        self._checked: set[str] = set()
        self._inflight: set[_RayFuture] = set()
        self._task = self._ray.remote(_ray_task).options(
            num_cpus=num_cpus_per_task, max_retries=self.max_retries
        )
        self.submitted = 0
        """Tasks submitted so far (the cluster-side checks not counted)."""

    def __repr__(self) -> str:
        return f"RayBackend(address={self.address!r}, num_cpus_per_task={self.num_cpus_per_task})"

    def submit(self, fn: Callable[[Any], Any], item: Any) -> cf.Future[Any]:
        if self._released:
            raise RuntimeError("this RayBackend was shut down; create a new Executor")
        root = getattr(item, "cache_root", None)  # a ProbeJob's artifact store
        root = str(root) if root else None
        if root is not None:
            self._ensure_shared(root)
        ref = self._task.remote(fn, item, root, self.threads)
        future = _RayFuture(self._ray, ref)
        with self._lock:
            self._inflight.add(future)
            self.submitted += 1
        ref.future().add_done_callback(lambda done: self._settle(future, done))
        return future

    def _settle(self, future: _RayFuture, done: cf.Future[Any]) -> None:
        """Runs in Ray's thread when the task finishes: hand its value (or why it has none) to ``future``."""
        try:
            value = done.result()
        except Exception as exc:
            lost = _ray_failure(exc, self.max_retries)
            value = _Failure(lost, f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._inflight.discard(future)
        with contextlib.suppress(cf.InvalidStateError):  # cancelled meanwhile
            future.set_result(value)

    def _ensure_shared(self, root: str) -> None:
        """Once per cache directory: create it here (so a node that lacks it really is not sharing it),
        then, unless disabled, ask every node about it."""
        with self._lock:
            if root in self._checked:
                return
        if self.check_shared_paths:
            self.check_shared(root)
        else:
            Path(root).mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._checked.add(root)

    def check_shared(self, path: str | Path) -> dict[str, dict[str, Any]]:
        """Check that ``path`` is one directory shared by every alive node, at the same path.

        Writes a marker file into ``path`` (creating it) and asks each node, with a zero-CPU task pinned to
        it, whether it sees the marker. On a single machine this always holds.

        Returns:
            Node label -> its answer (``{"node", "exists", "same"}``); nodes silent for ``check_timeout``
            seconds are left out.

        Raises:
            SharedPathError: A node lacks the directory or has a different one.
            RaySetupError: A node could not run the check (ray or rlaudit not importable there).
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        root = Path(path).expanduser().absolute()
        root.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        marker = root / f".rlaudit-ray-check-{token[:12]}"
        marker.write_text(token)
        answers: dict[str, dict[str, Any]] = {}
        try:
            nodes = [node for node in ray.nodes() if node.get("Alive")]
            check = ray.remote(_check_node)
            refs = {}
            for node in nodes:
                label = str(
                    node.get("NodeManagerHostname") or node.get("NodeManagerAddress") or node["NodeID"]
                )
                # Zero CPUs, pinned to the node: the check runs even while jobs fill every CPU.
                pinned = check.options(
                    num_cpus=0,
                    max_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False),
                )
                refs[pinned.remote(str(root), marker.name, token)] = label
            ready, silent = ray.wait(list(refs), num_returns=len(refs), timeout=self.check_timeout)
            for ref in ready:
                try:
                    answers[refs[ref]] = ray.get(ref)
                except Exception as exc:
                    answers[refs[ref]] = {"error": _ray_failure(exc, 0).args[0]}
            for ref in silent:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            if silent:
                warnings.warn(
                    f"Ray node(s) {', '.join(sorted(refs[r] for r in silent))} did not answer the shared-cache "
                    f"check within {self.check_timeout:g} s; jobs there check the cache directory themselves",
                    RuntimeWarning,
                    stacklevel=2,
                )
        finally:
            with contextlib.suppress(OSError):
                marker.unlink()
        problems = shared_path_problems(str(root), answers)
        if problems:
            not_shared = any("error" not in answer for answer in answers.values() if not answer.get("same"))
            cls = SharedPathError if not_shared else RaySetupError
            raise cls("; ".join(problems))
        return answers

    def shutdown(self, wait: bool = True) -> None:
        """Cancel the tasks still running, then let go of the connection (a private cluster stops with
        the last backend that uses it; a connection to an existing cluster stays open for the next one)."""
        if self._released:
            return
        self._released = True
        with self._lock:
            pending = list(self._inflight)
        for future in pending:
            future.cancel()
        if wait and pending:
            cf.wait(pending, timeout=30)
        _ray_release()
