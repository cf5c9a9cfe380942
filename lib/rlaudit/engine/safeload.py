"""Read checkpoints users already have without running code hidden in them.

A pickle is a program: unpickling a checkpoint can import any module and call any function the file names.
rlaudit therefore reads only what a file can hold without that:

=============================  =============================================================================
format                         how it is read
=============================  =============================================================================
``torch`` (``.pt/.pth/...``)   ``torch.load(weights_only=True)``: tensors, numbers, strings, dicts, lists
                               (and numpy arrays, allow-listed for torch's weights-only unpickler)
``safetensors``                ``safetensors.torch.load_file`` plus the header's metadata
``sb3`` (Stable-Baselines3)    the ``data`` JSON (entries marked ``:serialized:`` are skipped and their
                               classes named), ``policy.pth`` / ``policy.optimizer.pth`` / ... with
                               ``weights_only=True``
``npz`` / ``npy``              ``numpy.load(allow_pickle=False)``
``pickle`` (``.pkl``)          only when every global it names is on a short allow-list (containers, numpy
                               arrays and scalars), through an unpickler that refuses anything else
=============================  =============================================================================

Anything else (a pickled class instance, a VecNormalize object, a lambda schedule) is *reported*: the classes
and functions the file would import are listed by disassembling the pickle (:mod:`pickletools`, or
``torch.serialization.get_unsafe_globals_in_checkpoint`` for torch files), never by executing it. Passing
``trust=True`` unpickles for real; do that only for files you made yourself.

:func:`load_checkpoint_safely` is the entry point; its result (:class:`SafeCheckpoint`) holds the tensors
flattened by key (nesting levels joined with ``/``: ``policy/actor.0.weight``, ``optimizer/state/0/exp_avg``),
the plain (JSON-like) rest as ``metadata``, and ``unsafe_globals``.

Heavy modules (torch, numpy, safetensors) are imported inside the functions that need them.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import pickletools
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEPARATOR = "/"
"""Joins nesting levels in :attr:`SafeCheckpoint.tensors` keys (state-dict keys keep their own dots)."""

SAFE_PICKLE_GLOBALS: frozenset[str] = frozenset(
    {
        # containers and literals pickle protocol 2+ writes through globals
        "collections.OrderedDict",
        "builtins.set",
        "builtins.frozenset",
        "builtins.complex",
        "builtins.slice",
        "builtins.bytearray",
        "_codecs.encode",
        # numpy arrays, dtypes and scalars (numpy 1.x and 2.x module names)
        "numpy.core.multiarray._reconstruct",
        "numpy._core.multiarray._reconstruct",
        "numpy.core.multiarray.scalar",
        "numpy._core.multiarray.scalar",
        "numpy.ndarray",
        "numpy.dtype",
    }
)
"""Globals a plain pickle may name and still be read without ``trust``: each only builds data (no file, process
or import side effects), the same reasoning as torch's ``weights_only`` allow-list."""

_TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # first object of torch's pre-1.6 (non-zip) format
_TORCH_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".tar")
_STRING_OPS = frozenset(
    {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
)
_GET_OPS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_NO_PUSH_OPS = frozenset({"PROTO", "FRAME", "MARK", "STOP", "POP", "POP_MARK", "MEMOIZE"}) | _PUT_OPS


class UnsafeCheckpointError(ValueError):
    """A checkpoint could not be read without unpickling objects; ``globals`` names what it would import."""

    def __init__(self, message: str, path: str, globals_: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.path = path
        self.globals = sorted(set(globals_))


@dataclass
class SafeCheckpoint:
    """What rlaudit could read from a checkpoint file without executing it.

    Attributes:
        path: The file.
        format: ``"torch"``, ``"torch-legacy"``, ``"safetensors"``, ``"sb3"``, ``"npz"``, ``"npy"`` or
            ``"pickle"``.
        tensors: Every tensor/array, flattened by key (levels joined with ``/``). ``torch.Tensor`` for torch,
            safetensors and SB3 files; ``numpy.ndarray`` for numpy files and pickles.
        metadata: The rest, as plain JSON-like values (numbers, strings, lists, dicts) in the file's nesting;
            for SB3 zips ``data`` (the readable part of the ``data`` JSON), ``serialized`` (entry ->
            the classes it would import), ``sb3_version``, ``system_info``.
        unsafe_globals: ``module.name`` of every class/function a pickle in the file would import that rlaudit
            did not (sorted). Empty when the file was read completely.
        loaded: True when the file's tensors were read; False when that needed unpickling objects
            (then ``tensors`` is empty or partial and ``message`` says why).
        skipped: Parts left unread (``"data/policy_class"`` of an SB3 zip, a ``.pth`` member, the whole file).
        trusted: True when the file was read with ``trust=True`` (objects were unpickled).
        message: Empty when everything was read, else one sentence naming the globals and how to opt in.
        objects: With ``trust=True``, the unpickled top-level objects (``{"": obj}`` for a single pickle,
            ``{"data/<entry>": obj}`` for SB3 entries); empty otherwise.
    """

    path: str
    format: str
    tensors: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    unsafe_globals: list[str] = field(default_factory=list)
    loaded: bool = True
    skipped: list[str] = field(default_factory=list)
    trusted: bool = False
    message: str = ""
    objects: dict[str, Any] = field(default_factory=dict)

    def group(self, prefix: str) -> dict[str, Any]:
        """The tensors under ``prefix`` with the prefix removed: ``ckpt.group("policy")`` is a state dict."""
        head = prefix.rstrip(SEPARATOR) + SEPARATOR
        return {k[len(head) :]: v for k, v in self.tensors.items() if k.startswith(head)}

    def arrays(self) -> dict[str, Any]:
        """:attr:`tensors` as numpy arrays (CPU copies of torch tensors), same keys."""
        import numpy as np

        out = {}
        for key, value in self.tensors.items():
            if hasattr(value, "detach"):
                value = value.detach().cpu()
                if str(value.dtype) == "torch.bfloat16":  # numpy has no bfloat16
                    value = value.float()
                value = value.numpy()
            out[key] = np.asarray(value)
        return out

    def raise_if_unloaded(self) -> SafeCheckpoint:
        """Return self when the tensors were read; else raise :class:`UnsafeCheckpointError`."""
        if not self.loaded:
            raise UnsafeCheckpointError(self.message, self.path, self.unsafe_globals)
        return self


def unsafe_message(path: str | Path, globals_: Iterable[str], *, what: str = "checkpoint") -> str:
    """The sentence rlaudit says when it will not unpickle ``path``.

    Names that look like classes (last part capitalized) are called classes, the rest functions:
    ``checkpoint x.pt holds a pickled object of class foo.Bar; rlaudit loads only tensors unless you pass
    trust=True``.
    """
    names = sorted(set(globals_))
    classes = [n for n in names if n.rsplit(".", 1)[-1][:1].isupper()]
    functions = [n for n in names if n not in classes and not n.startswith("<")]
    parts = []
    if len(classes) == 1:
        parts.append(f"a pickled object of class {classes[0]}")
    elif classes:
        parts.append(f"pickled objects of classes {', '.join(classes)}")
    if functions:
        parts.append(f"pickled calls to {', '.join(functions)}")
    if not parts:
        parts.append("pickled objects whose classes cannot be identified without running them")
    return (
        f"{what} {path} holds {' and '.join(parts)}; rlaudit loads only tensors unless you pass trust=True "
        "(unpickling runs code from the file: only do it for files you made or trust)"
    )


# ---------------------------------------------------------------------------------------------------------
# Static pickle inspection


def pickle_globals(data: bytes) -> list[str]:
    """Every ``module.name`` the pickle(s) in ``data`` would import, found without unpickling.

    Reads ``GLOBAL``/``INST`` arguments and the two strings ``STACK_GLOBAL`` takes (tracking the memo, since
    protocol 4 memoizes module names and fetches them again with ``BINGET``). Consecutive pickles in one
    buffer (torch's legacy format writes several) are all read. Extension codes (``EXT1/2/4``) are reported
    as ``copyreg.extension:<code>``.

    Args:
        data: The raw bytes of a pickle stream.

    Returns:
        Sorted unique names, e.g. ``["builtins.exec", "collections.OrderedDict"]``. A name that cannot be
        determined statically is reported as ``"<dynamic>"``.
    """
    found: set[str] = set()
    stream = io.BytesIO(data)
    while True:
        start = stream.tell()
        if start >= len(data):
            break
        memo: dict[int, Any] = {}
        recent: list[Any] = []
        try:
            for opcode, arg, _pos in pickletools.genops(stream):
                name = opcode.name
                if name in ("GLOBAL", "INST"):
                    module, _, attr = str(arg).partition(" ")
                    found.add(_py3_name(module, attr))
                    recent.append(None)
                elif name == "STACK_GLOBAL":
                    module, attr = (recent[-2], recent[-1]) if len(recent) >= 2 else (None, None)
                    if isinstance(module, str) and isinstance(attr, str):
                        found.add(_py3_name(module, attr))
                    else:
                        found.add("<dynamic>")
                    del recent[-2:]
                    recent.append(None)
                elif name.startswith("EXT"):
                    found.add(f"copyreg.extension:{arg}")
                    recent.append(None)
                elif name in _STRING_OPS:
                    recent.append(arg.decode("latin-1") if isinstance(arg, bytes) else arg)
                elif name in _GET_OPS:
                    recent.append(memo.get(int(arg)))
                elif name == "MEMOIZE":
                    memo[len(memo)] = recent[-1] if recent else None
                elif name in _PUT_OPS:
                    memo[int(arg)] = recent[-1] if recent else None
                elif name not in _NO_PUSH_OPS:
                    recent.append(None)
                if len(recent) > 64:  # only the top two matter for STACK_GLOBAL
                    del recent[:-8]
        except (ValueError, EOFError, UnicodeDecodeError):
            # Not (or no longer) a pickle: trailing raw bytes, e.g. the storages after a legacy torch pickle.
            if stream.tell() == start:
                break
        if stream.tell() == start:
            break
        # torch's legacy format stores raw storage bytes after its pickles; stop at the first non-pickle byte
        peek = data[stream.tell() : stream.tell() + 1]
        if peek != b"\x80":
            break
    return sorted(found)


def _py3_name(module: str, attr: str) -> str:
    # Protocol <= 2 pickles name Python 2 modules; pickle maps them on load (fix_imports), so do we.
    module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)
    return f"{module}.{attr}"


def is_pickle(head: bytes) -> bool:
    """Whether bytes look like the start of a pickle of protocol 2 or newer."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only :data:`SAFE_PICKLE_GLOBALS`; any other global or persistent id is refused."""

    def find_class(self, module: str, name: str) -> Any:
        full = _py3_name(module, name)
        if full not in SAFE_PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"global {full} is not on rlaudit's allow-list")
        return super().find_class(module, name)


def load_pickle_safely(data: bytes, *, trust: bool = False, source: str = "pickle") -> tuple[Any, list[str]]:
    """Unpickle ``data`` when it names only allow-listed globals (or when ``trust`` is True).

    Args:
        data: Raw pickle bytes.
        trust: Unpickle whatever it names (runs code).
        source: How error messages name the data (a path, ``"zip member x.pkl"``).

    Returns:
        ``(obj, globals)``: the object and every global the pickle names.

    Raises:
        UnsafeCheckpointError: Without ``trust``, the pickle names a global outside the allow-list.
    """
    names = pickle_globals(data)
    if trust:
        return pickle.loads(data), names
    unsafe = [n for n in names if n not in SAFE_PICKLE_GLOBALS]
    if unsafe:
        raise UnsafeCheckpointError(unsafe_message(source, unsafe, what="file"), source, unsafe)
    try:
        return _RestrictedUnpickler(io.BytesIO(data)).load(), names
    except pickle.UnpicklingError as exc:
        # The static scan missed something (a dynamically built name): still refuse, name what we know.
        raise UnsafeCheckpointError(
            f"{unsafe_message(source, ['<dynamic>'], what='file')} ({exc})", source, ["<dynamic>"]
        ) from None


# ---------------------------------------------------------------------------------------------------------
# Flattening loaded objects into tensors + plain metadata

_ABSENT = object()


# Type-level checks only: instances of trusted classes may define __getattr__ (SB3's VecEnv wrappers recurse).
def _is_tensor(value: Any) -> bool:
    cls = type(value)
    if cls.__module__.startswith("torch") and hasattr(cls, "detach") and hasattr(cls, "shape"):
        return True
    return cls.__module__ == "numpy" and cls.__name__ == "ndarray"


def _is_numpy_scalar(value: Any) -> bool:
    cls = type(value)
    return cls.__module__ == "numpy" and cls.__name__ != "ndarray" and hasattr(cls, "item")


def _qualname(obj: Any) -> str:
    target = obj if isinstance(obj, type) or callable(obj) else type(obj)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__name__)}"


def split_tensors(obj: Any, tensors: dict[str, Any], prefix: str = "", _depth: int = 0) -> Any:
    """Move every tensor/array in ``obj`` into ``tensors`` (flattened keys); return the plain remainder.

    Containers keep their shape minus the tensors (a dict that held only tensors disappears); numpy/torch
    scalars become Python numbers; torch sizes and dtypes become lists and strings; other objects (only
    present after a trusted load) become ``{"__class__": "module.Class", **their attributes}``.

    Args:
        obj: A loaded checkpoint (or any part of it).
        tensors: Receives ``{key: tensor}``.
        prefix: Key of ``obj`` itself.

    Returns:
        The plain remainder, or a private sentinel when nothing but tensors was there.
    """

    def key(part: Any) -> str:
        return f"{prefix}{SEPARATOR}{part}" if prefix else str(part)

    if _depth > 64:
        return repr(obj)[:200]
    if _is_tensor(obj):
        if getattr(obj, "ndim", 1) == 0 and type(obj).__module__ == "numpy":
            return obj.item()
        tensors[prefix or "tensor"] = obj
        return _ABSENT
    if _is_numpy_scalar(obj):  # before the float check: np.float64 is a float subclass
        return obj.item()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    if isinstance(obj, Mapping):
        out = {}
        had_any = False
        for k, v in obj.items():
            had_any = True
            sub = split_tensors(v, tensors, key(k), _depth + 1)
            if sub is not _ABSENT:
                out[str(k)] = sub
        return _ABSENT if had_any and not out else out
    if isinstance(obj, list | tuple):
        if type(obj).__name__ == "Size" and type(obj).__module__.startswith("torch"):
            return list(obj)
        items = [split_tensors(v, tensors, key(i), _depth + 1) for i, v in enumerate(obj)]
        if items and all(item is _ABSENT for item in items):
            return _ABSENT
        return [None if item is _ABSENT else item for item in items]
    if isinstance(obj, set | frozenset):
        return sorted((split_tensors(v, tensors, key(i), _depth + 1) for i, v in enumerate(obj)), key=repr)
    module = type(obj).__module__
    if module.startswith("torch") and type(obj).__name__ == "dtype":
        return str(obj)
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "__dict__")):
        return _qualname(obj)
    try:
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        state = None
    if isinstance(state, dict):
        out = {"__class__": _qualname(obj)}
        rest = split_tensors(state, tensors, prefix, _depth + 1)
        if isinstance(rest, dict):
            out.update(rest)
        return out
    return repr(obj)[:200]


def _split(obj: Any, prefix: str = "") -> tuple[dict[str, Any], Any]:
    tensors: dict[str, Any] = {}
    rest = split_tensors(obj, tensors, prefix)
    return tensors, ({} if rest is _ABSENT else rest)


# ---------------------------------------------------------------------------------------------------------
# Format detection and readers


def detect_format(path: str | Path) -> str:
    """The checkpoint format of ``path`` from its content (suffixes only break ties).

    Returns:
        One of ``torch``, ``torch-legacy``, ``safetensors``, ``sb3``, ``npz``, ``npy``, ``pickle``.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: The content matches none of the formats (the message lists them).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"checkpoint {path} not found; expected a .pt/.pth/.safetensors/.zip/.pkl file"
        )
    with path.open("rb") as f:
        head = f.read(16)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
        if "data" in names and any(n.endswith(".pth") for n in names):
            return "sb3"
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            return "torch"
        if names and all(n.endswith(".npy") for n in names):
            return "npz"
        raise ValueError(
            f"checkpoint {path} is a zip archive but neither a torch checkpoint (no data.pkl), an SB3 model "
            f"(no data + policy.pth) nor an .npz; members: {', '.join(names[:12])}"
        )
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if len(head) >= 9 and head[8:9] == b"{":
        header_len = int.from_bytes(head[:8], "little")
        if 0 < header_len < 100_000_000:
            return "safetensors"
    if is_pickle(head):
        with path.open("rb") as f:
            start = f.read(64)
        try:
            # torch's legacy format opens with a pickle of its magic number (PROTO, LONG1 <magic>, STOP)
            for op, arg, _ in pickletools.genops(io.BytesIO(start)):
                if op.name == "LONG1" and arg == _TORCH_LEGACY_MAGIC:
                    return "torch-legacy"
                if op.name == "STOP":
                    break
        except (ValueError, EOFError):
            pass
        return "pickle"
    raise ValueError(
        f"checkpoint {path} has an unrecognized format (first bytes {head[:8]!r}); rlaudit reads torch "
        ".pt/.pth files, safetensors, Stable-Baselines3 .zip models, .npz/.npy and pickles"
    )


def _numpy_safe_globals() -> list[Any]:
    """numpy's array, dtype and scalar constructors, for torch's weights-only unpickler.

    torch refuses numpy arrays under ``weights_only`` unless they are allow-listed, yet trainers often save
    observation statistics as numpy arrays beside their tensors. Rebuilding an array runs no user code
    (object arrays excepted: their items still go through the same allow-list). Checkpoints written with
    numpy 1.x name ``numpy.core.multiarray``; numpy 2 moved it to ``numpy._core``: both names are listed.
    """
    import numpy as np

    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    allowed: list[Any] = [np.ndarray, np.dtype]
    for fn in (multiarray._reconstruct, multiarray.scalar):
        allowed += [
            fn,
            (fn, f"numpy.core.multiarray.{fn.__name__}"),
            (fn, f"numpy._core.multiarray.{fn.__name__}"),
        ]
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None:
        allowed += [getattr(dtypes, n) for n in dir(dtypes) if n.endswith("DType")]
    return allowed


def _torch_load_weights(source: Any) -> Any:
    import torch

    with torch.serialization.safe_globals(_numpy_safe_globals()):
        return torch.load(source, map_location="cpu", weights_only=True)


def _torch_unsafe_globals(source: Any, raw: bytes | None = None) -> list[str]:
    """Globals a torch checkpoint would import beyond the weights-only allow-list (plus numpy arrays)."""
    import torch

    try:
        if hasattr(source, "seek"):
            source.seek(0)
        with torch.serialization.safe_globals(_numpy_safe_globals()):
            names = list(torch.serialization.get_unsafe_globals_in_checkpoint(source))
    except Exception:
        # Legacy (non-zip) files are not supported by torch's scanner: disassemble the pickle ourselves.
        data = raw if raw is not None else Path(source).read_bytes()
        if data.startswith(b"PK"):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                member = next(n for n in zf.namelist() if n.endswith("data.pkl"))
                data = zf.read(member)
        names = [
            n for n in pickle_globals(data) if not n.startswith("torch.") and n not in SAFE_PICKLE_GLOBALS
        ]
    return sorted(set(names)) or ["<dynamic>"]


def _read_torch(path: Path, fmt: str, trust: bool) -> SafeCheckpoint:
    import torch

    try:
        obj = _torch_load_weights(path)
    except pickle.UnpicklingError:
        unsafe = _torch_unsafe_globals(str(path))
        if not trust:
            return SafeCheckpoint(
                path=str(path),
                format=fmt,
                unsafe_globals=unsafe,
                loaded=False,
                skipped=[""],
                message=unsafe_message(path, unsafe),
            )
        obj = torch.load(path, map_location="cpu", weights_only=False)
        tensors, meta = _split(obj)
        return SafeCheckpoint(
            path=str(path),
            format=fmt,
            tensors=tensors,
            metadata=meta if isinstance(meta, dict) else {"": meta},
            unsafe_globals=unsafe,
            trusted=True,
            objects={"": obj},
        )
    tensors, meta = _split(obj)
    return SafeCheckpoint(
        path=str(path), format=fmt, tensors=tensors, metadata=meta if isinstance(meta, dict) else {"": meta}
    )


def _read_safetensors(path: Path) -> SafeCheckpoint:
    from safetensors import safe_open
    from safetensors.torch import load_file

    tensors = load_file(str(path), device="cpu")
    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata() or {})
    return SafeCheckpoint(path=str(path), format="safetensors", tensors=dict(tensors), metadata=meta)


def _read_numpy(path: Path, fmt: str, trust: bool) -> SafeCheckpoint:
    import numpy as np

    def read(allow_pickle: bool) -> dict[str, Any]:
        loaded = np.load(path, allow_pickle=allow_pickle)
        if fmt == "npy":
            return {"array": loaded}
        with loaded:  # an NpzFile reads (and unpickles) each member only when it is accessed
            return {k: loaded[k] for k in loaded.files}

    try:
        tensors = read(allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise
        if not trust:
            return SafeCheckpoint(
                path=str(path),
                format=fmt,
                loaded=False,
                skipped=[""],
                unsafe_globals=["<dynamic>"],
                message=unsafe_message(path, []) + " (it holds numpy object arrays, which are pickles)",
            )
        tensors = read(allow_pickle=True)
    return SafeCheckpoint(path=str(path), format=fmt, tensors=tensors, trusted=trust)


def _read_pickle(path: Path, trust: bool) -> SafeCheckpoint:
    data = path.read_bytes()
    names = pickle_globals(data)
    unsafe = [n for n in names if n not in SAFE_PICKLE_GLOBALS]
    if unsafe and not trust:
        return SafeCheckpoint(
            path=str(path),
            format="pickle",
            unsafe_globals=unsafe,
            loaded=False,
            skipped=[""],
            message=unsafe_message(path, unsafe),
        )
    try:
        obj, _ = load_pickle_safely(data, trust=trust, source=str(path))
    except UnsafeCheckpointError as exc:
        return SafeCheckpoint(
            path=str(path),
            format="pickle",
            unsafe_globals=exc.globals,
            loaded=False,
            skipped=[""],
            message=str(exc),
        )
    tensors, meta = _split(obj)
    return SafeCheckpoint(
        path=str(path),
        format="pickle",
        tensors=tensors,
        metadata=meta if isinstance(meta, dict) else {"": meta},
        unsafe_globals=unsafe,
        trusted=trust and bool(unsafe),
        objects={"": obj} if trust else {},
    )


def _read_sb3(path: Path, trust: bool) -> SafeCheckpoint:
    """An SB3 model zip: ``data`` JSON, ``*.pth`` tensors, version and system info."""
    result = SafeCheckpoint(path=str(path), format="sb3")
    serialized: dict[str, list[str]] = {}
    data_plain: dict[str, Any] = {}
    all_unsafe: set[str] = set()
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        try:
            data = json.loads(zf.read("data").decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"SB3 model {path}: its data member is not valid JSON ({exc})") from None
        for key, value in data.items():
            if isinstance(value, dict) and ":serialized:" in value:
                raw = base64.b64decode(value[":serialized:"].encode())
                globals_ = pickle_globals(raw)
                serialized[key] = globals_
                all_unsafe.update(g for g in globals_ if g not in SAFE_PICKLE_GLOBALS)
                # SB3 stores a readable description beside the pickle (":type:", shapes, dtypes, bounds)
                readable = {k: v for k, v in value.items() if k != ":serialized:"}
                if readable:
                    data_plain[key] = readable
                if trust:
                    result.objects[f"data{SEPARATOR}{key}"] = pickle.loads(raw)
                else:
                    result.skipped.append(f"data{SEPARATOR}{key}")
            else:
                data_plain[key] = value
        for member in names:
            if not member.endswith(".pth"):
                continue
            prefix = member[: -len(".pth")]
            raw = zf.read(member)
            try:
                obj = _torch_load_weights(io.BytesIO(raw))
            except pickle.UnpicklingError:
                unsafe = _torch_unsafe_globals(io.BytesIO(raw), raw)
                all_unsafe.update(unsafe)
                if not trust:
                    result.skipped.append(member)
                    result.loaded = False
                    continue
                import torch

                obj = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=False)
                result.objects[prefix] = obj
            tensors, meta = _split(obj, prefix)
            result.tensors.update(tensors)
            if meta not in ({}, None):
                data_plain.setdefault("_pth", {})[prefix] = meta
        for text_member, meta_key in (
            ("_stable_baselines3_version", "sb3_version"),
            ("system_info.txt", "system_info"),
        ):
            if text_member in names:
                result.metadata[meta_key] = zf.read(text_member).decode("utf-8", "replace").strip()
    result.metadata["data"] = data_plain
    result.metadata["serialized"] = serialized
    result.unsafe_globals = sorted(all_unsafe)
    result.trusted = trust and bool(all_unsafe)
    if not result.loaded:
        bad = [m for m in result.skipped if m.endswith(".pth")]
        result.message = (
            unsafe_message(path, all_unsafe, what="SB3 model") + f" (unread members: {', '.join(bad)})"
        )
    elif result.skipped:
        entries = ", ".join(s.split(SEPARATOR, 1)[1] for s in result.skipped)
        result.message = (
            f"SB3 model {path}: tensors read; skipped pickled data entries {entries} (they would import "
            f"{', '.join(result.unsafe_globals) or 'nothing identifiable'}); pass trust=True to unpickle them"
        )
    return result


def load_checkpoint_safely(path: str | Path, trust: bool = False) -> SafeCheckpoint:
    """Read a checkpoint's tensors and plain metadata without executing code from it.

    Args:
        path: A torch ``.pt/.pth`` (zip or legacy format), ``.safetensors``, Stable-Baselines3 model ``.zip``,
            ``.npz``/``.npy``, or pickle (``.pkl``, e.g. SB3's ``vecnormalize.pkl``).
        trust: Unpickle objects the file holds (runs code from the file: only for files you made or trust).

    Returns:
        A :class:`SafeCheckpoint`. When the file cannot be read without unpickling objects and ``trust`` is
        False, ``loaded`` is False, ``unsafe_globals`` names what it would import and ``message`` says how to
        opt in (``raise_if_unloaded()`` turns that into an :class:`UnsafeCheckpointError`). Nothing in the
        file is executed in that case.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: The format is not recognized.
    """
    path = Path(path)
    fmt = detect_format(path)
    if fmt in ("torch", "torch-legacy"):
        return _read_torch(path, fmt, trust)
    if fmt == "safetensors":
        return _read_safetensors(path)
    if fmt == "sb3":
        return _read_sb3(path, trust)
    if fmt in ("npz", "npy"):
        return _read_numpy(path, fmt, trust)
    return _read_pickle(path, trust)


def checkpoint_suffixes() -> tuple[str, ...]:
    """File suffixes :func:`load_checkpoint_safely` is meant for (for globbing run directories)."""
    return (*_TORCH_SUFFIXES, ".safetensors", ".zip", ".npz", ".npy", ".pkl", ".pickle")
