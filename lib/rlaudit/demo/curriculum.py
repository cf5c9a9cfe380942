"""Task curricula for the arena: a family of map variants, learning-progress sampling over a sum tree, uniform.

A *task* is an integer index into a :class:`TaskFamily` (a map size, object counts and an altar cost). The
environment asks the curriculum for the next task on every reset (``sample() -> int``) and reports the
finished episode's ``heart.get`` back (``update(task, score)``).

:class:`LearningProgressCurriculum` keeps a pool of ``max_tasks`` slots (like the shared-memory task table of
case 004), of which the family's tasks occupy the first ones. Each active slot holds a fast and a slow
exponential moving average of its task's score; learning progress is ``|fast - slow|`` (Portelas et al.
2020, "Teacher algorithms for curriculum learning of deep RL in continuously parameterized environments").
A task is drawn with probability ``explore / n + (1 - explore) * lp_i / sum(lp)`` (uniform while no task has
progress). The learning-progress weights live in a :class:`SumTree`, so one episode (one ``update`` and one
``sample``) touches O(log max_tasks) nodes: only the updated task's leaf and its ancestors change.

The ``curriculum_full_scan`` code path of :class:`rlaudit.demo.arena.ArenaImpl` reproduces case 004's
regression: every ``update`` invalidates the cached distribution and rebuilds it by reading every slot's
state record, O(max_tasks) per episode, with the same resulting distribution. ``label_dict_growth`` keeps a
label entry per episode that is never pruned.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, TypeVar, runtime_checkable

import numpy as np

from rlaudit.demo.sections import ConfigSection

if TYPE_CHECKING:
    from rlaudit.demo.arena import ArenaImpl

T = TypeVar("T")

#: Columns of :attr:`TaskFamily.params`, in order.
TASK_FIELDS: tuple[str, ...] = ("size", "mines", "generators", "altars", "walls", "altar_cost")

CURRICULUM_KINDS: tuple[str, ...] = ("learning_progress", "random", "none")


def _int_list(name: str, values: Any, minimum: int) -> list[int]:
    if isinstance(values, int | np.integer) and not isinstance(values, bool):
        values = [values]
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError) as e:
        raise ValueError(f"curriculum.{name} must be a list of integers, got {values!r}") from e
    if not out:
        raise ValueError(f"curriculum.{name} must list at least one value, got an empty list")
    if min(out) < minimum:
        raise ValueError(f"curriculum.{name} values must be >= {minimum}, got {out}")
    return out


@dataclass
class CurriculumConfig(ConfigSection):
    """How each reset chooses its map variant (the ``curriculum`` config section)."""

    section: ClassVar[str] = "curriculum"

    kind: str = "learning_progress"  # learning_progress | random | none (always the env section's own map)
    max_tasks: int = 1024  # slots in the task pool (its capacity); the family's tasks fill the first ones
    ema_fast: float = 0.1  # smoothing rate of the fast moving average of a task's score
    ema_slow: float = 0.02  # smoothing rate of the slow moving average (learning progress = |fast - slow|)
    explore: float = 0.2  # probability of drawing a task uniformly instead of by learning progress
    sizes: list[int] = field(default_factory=lambda: [5, 7])  # interior side lengths of the family's maps
    mines: list[int] = field(default_factory=lambda: [1, 2])  # mine counts of the family's maps
    generators: list[int] = field(default_factory=lambda: [1])  # generator counts
    altars: list[int] = field(default_factory=lambda: [1])  # altar counts
    walls: list[int] = field(default_factory=lambda: [0, 2])  # internal wall blocks
    altar_costs: list[int] = field(default_factory=lambda: [1, 2])  # batteries an altar takes per heart

    def __post_init__(self) -> None:
        if self.kind not in CURRICULUM_KINDS:
            raise ValueError(f"curriculum.kind must be one of {CURRICULUM_KINDS}, got {self.kind!r}")
        if int(self.max_tasks) < 1:
            raise ValueError(f"curriculum.max_tasks must be >= 1, got {self.max_tasks!r}")
        self.max_tasks = int(self.max_tasks)
        for name in ("ema_fast", "ema_slow", "explore"):
            value = float(getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"curriculum.{name} must be in [0, 1], got {value!r}")
            setattr(self, name, value)
        self.sizes = _int_list("sizes", self.sizes, 2)
        self.mines = _int_list("mines", self.mines, 1)
        self.generators = _int_list("generators", self.generators, 1)
        self.altars = _int_list("altars", self.altars, 1)
        self.walls = _int_list("walls", self.walls, 0)
        self.altar_costs = _int_list("altar_costs", self.altar_costs, 1)


class TaskFamily:
    """The map variants a curriculum chooses between: one row of :data:`TASK_FIELDS` per task.

    Attributes:
        params: ``(num_tasks, 6)`` int64, columns in :data:`TASK_FIELDS` order.
    """

    def __init__(self, params: np.ndarray) -> None:
        params = np.asarray(params, dtype=np.int64)
        if params.ndim != 2 or params.shape[1] != len(TASK_FIELDS) or len(params) == 0:
            raise ValueError(
                f"task params must have shape (num_tasks >= 1, {len(TASK_FIELDS)}) with columns "
                f"{TASK_FIELDS}, got shape {params.shape}"
            )
        objects = params[:, 1:5].sum(axis=1) + 1  # + the agent's own cell
        too_full = np.flatnonzero(objects > params[:, 0] ** 2)
        if len(too_full):
            i = int(too_full[0])
            raise ValueError(
                f"task {i} ({self._label(params[i])}) needs {int(objects[i])} cells (objects + agent) but a "
                f"{int(params[i, 0])}x{int(params[i, 0])} map has {int(params[i, 0]) ** 2}; use fewer objects "
                "or a larger size"
            )
        self.params = params
        self.params.setflags(write=False)

    @classmethod
    def from_config(cls, config: CurriculumConfig) -> TaskFamily:
        """The cartesian product of the config's lists (sizes vary slowest, altar costs fastest)."""
        rows = list(
            itertools.product(
                config.sizes, config.mines, config.generators, config.altars, config.walls, config.altar_costs
            )
        )
        return cls(np.array(rows, dtype=np.int64))

    @classmethod
    def single(
        cls, size: int, mines: int, generators: int, altars: int, walls: int, altar_cost: int
    ) -> TaskFamily:
        """A family of one task (the environment's own map when it has no curriculum)."""
        return cls(np.array([[size, mines, generators, altars, walls, altar_cost]], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.params)

    def task(self, task: int) -> dict[str, int]:
        """The parameters of one task by field name."""
        return {k: int(v) for k, v in zip(TASK_FIELDS, self.params[task], strict=True)}

    def label(self, task: int) -> str:
        """A readable name such as ``size=7 mines=2 generators=1 altars=1 walls=0 altar_cost=1``."""
        return self._label(self.params[task])

    @staticmethod
    def _label(row: np.ndarray) -> str:
        return " ".join(f"{k}={int(v)}" for k, v in zip(TASK_FIELDS, row, strict=True))


@runtime_checkable
class Curriculum(Protocol):
    """What the environment needs from a curriculum (the subject contract's ``make_curriculum``)."""

    def sample(self) -> int: ...

    def update(self, task: int, score: float) -> None: ...


class SumTree:
    """Partial sums over ``capacity`` non-negative weights: set one weight or draw proportionally in O(log n).

    Internal node ``j`` holds ``tree[2j] + tree[2j + 1]``; the root is node 1 and leaf ``i`` is node
    ``size + i`` (``size`` = ``capacity`` rounded up to a power of two). A parent is always recomputed as the
    sum of its two children (never updated by a delta), so an incremental ``set`` and a full ``rebuild`` of
    the same weights give bit-identical trees, and rounding never drifts.

    Attributes:
        nodes_touched: Nodes read or written so far (the work counter the cost tests use).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.size = 1 << (capacity - 1).bit_length()
        self.depth = self.size.bit_length() - 1
        # A Python list: scalar reads and writes on it are several times cheaper than on a numpy array.
        self._tree: list[float] = [0.0] * (2 * self.size)
        self.nodes_touched = 0

    @property
    def total(self) -> float:
        """The sum of all weights."""
        return self._tree[1]

    def get(self, i: int) -> float:
        """Weight ``i``."""
        return self._tree[self.size + i]

    def set(self, i: int, weight: float) -> None:
        """Set weight ``i`` and recompute its ancestors (``depth + 1`` nodes written)."""
        if not 0 <= i < self.capacity:
            raise IndexError(f"SumTree index {i} out of range [0, {self.capacity})")
        if not weight >= 0.0:  # also rejects NaN
            raise ValueError(f"SumTree weights must be non-negative numbers, got {weight!r} at index {i}")
        tree = self._tree
        j = self.size + i
        tree[j] = float(weight)
        j >>= 1
        while j:
            tree[j] = tree[2 * j] + tree[2 * j + 1]
            j >>= 1
        self.nodes_touched += self.depth + 1

    def find(self, u: float) -> int:
        """The index whose cumulative-weight interval contains ``u`` (``0 <= u < total``); O(depth).

        Zero-weight leaves are never returned while ``total > 0``, even when rounding puts ``u`` at the edge.
        """
        tree = self._tree
        j = 1
        while j < self.size:
            left = tree[2 * j]
            if u < left or tree[2 * j + 1] <= 0.0:
                u = min(u, left)
                j = 2 * j
            else:
                u -= left
                j = 2 * j + 1
        self.nodes_touched += self.depth
        return j - self.size

    def rebuild(self, weights: np.ndarray) -> None:
        """Replace all weights at once and recompute every internal node (O(size))."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (self.capacity,):
            raise ValueError(f"rebuild expects {self.capacity} weights, got shape {weights.shape}")
        level = np.zeros(self.size)
        level[: self.capacity] = weights
        levels = [level]
        while len(level) > 1:
            level = level[0::2] + level[1::2]
            levels.append(level)
        tree = [0.0] * (2 * self.size)
        for level in levels:  # the level with n nodes occupies tree[n:2n]
            tree[len(level) : 2 * len(level)] = level.tolist()
        self._tree = tree
        self.nodes_touched += 2 * self.size

    def weights(self) -> np.ndarray:
        """A copy of the ``capacity`` leaf weights."""
        return np.array(self._tree[self.size : self.size + self.capacity])


class SlotState(NamedTuple):
    """One slot of the task table, as the full-scan path reads it (case 004's ``get_task_state(i)``)."""

    task_id: int
    is_active: bool
    fast: float
    slow: float
    count: int


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


class _CurriculumBase:
    """Shared bookkeeping: task validation, episode counts, labels, the work counter."""

    def __init__(
        self,
        num_tasks: int,
        *,
        seed: int | np.random.Generator | None,
        impl: ArenaImpl | None,
        tasks: TaskFamily | None,
    ) -> None:
        if num_tasks < 1:
            raise ValueError(f"a curriculum needs at least one task, got num_tasks={num_tasks}")
        if tasks is not None and len(tasks) != num_tasks:
            raise ValueError(f"task family has {len(tasks)} tasks but num_tasks={num_tasks}")
        self.num_tasks = num_tasks
        self.tasks = tasks
        self.rng = _rng(seed)
        self._full_scan = bool(getattr(impl, "curriculum_full_scan", False))
        self._label_growth = bool(getattr(impl, "label_dict_growth", False))
        self.episodes = 0  # update() calls so far
        self.samples = 0  # sample() calls so far
        self.work = 0  # slots or tree nodes touched by sample() and update() (beyond O(1) bookkeeping)
        self.slots_scanned = 0  # slot-table records read by full scans (0 on the reference path)
        self._labels: dict[Any, Any] = {}

    def _check_task(self, task: int) -> int:
        t = int(task)
        if not 0 <= t < self.num_tasks:
            raise ValueError(f"task {task!r} is not in this curriculum's range [0, {self.num_tasks})")
        return t

    def _task_label(self, task: int) -> str:
        return self.tasks.label(task) if self.tasks is not None else f"task={task}"

    def _record_label(self, task: int, score: float) -> None:
        if self._label_growth:
            # Regressed path (case 004's label dictionary): one entry per episode, keyed by a per-episode
            # label and never pruned, so memory grows with the number of episodes played.
            self._labels[f"{self._task_label(task)}#episode={self.episodes}"] = {"task": task, "score": score}
        elif task not in self._labels:
            self._labels[task] = self._task_label(task)  # one entry per task: bounded by num_tasks

    def label_entries(self) -> int:
        """Entries in the label dictionary (bounded by the number of tasks on the reference path)."""
        return len(self._labels)

    def stats(self) -> dict[str, float]:
        """Counters for audits: episodes, samples, work done, label entries."""
        return {
            "episodes": float(self.episodes),
            "samples": float(self.samples),
            "work": float(self.work),
            "slots_scanned": float(self.slots_scanned),
            "label_entries": float(len(self._labels)),
        }


class RandomCurriculum(_CurriculumBase):
    """Uniform sampling over ``num_tasks`` tasks; ``update`` only counts episodes (O(1) per episode).

    Args:
        num_tasks: Tasks are ``0 .. num_tasks - 1``.
        seed: Seed or generator for the draws.
        impl: Code paths (only ``label_dict_growth`` applies).
        tasks: The task family the ids index (the environment reads its map parameters).
    """

    def __init__(
        self,
        num_tasks: int,
        *,
        seed: int | np.random.Generator | None = None,
        impl: ArenaImpl | None = None,
        tasks: TaskFamily | None = None,
    ) -> None:
        super().__init__(num_tasks, seed=seed, impl=impl, tasks=tasks)

    def sample(self) -> int:
        """A task drawn uniformly."""
        self.samples += 1
        self.work += 1
        return int(self.rng.integers(self.num_tasks))

    def update(self, task: int, score: float) -> None:
        """Count the episode (scores do not change a uniform distribution)."""
        t = self._check_task(task)
        self._record_label(t, float(score))
        self.episodes += 1
        self.work += 1

    def probabilities(self) -> np.ndarray:
        """``(num_tasks,)`` sampling probabilities (uniform)."""
        return np.full(self.num_tasks, 1.0 / self.num_tasks)


class LearningProgressCurriculum(_CurriculumBase):
    """Sample tasks by learning progress ``|fast EMA - slow EMA|`` of their scores, with uniform exploration.

    Args:
        num_tasks: Tasks are ``0 .. num_tasks - 1`` and occupy slots ``0 .. num_tasks - 1`` of the pool.
        max_tasks: Slots in the pool (its capacity, >= num_tasks); the sum tree spans all of them.
        ema_fast: Smoothing rate of the fast average (a task's first score initializes both averages).
        ema_slow: Smoothing rate of the slow average.
        explore: Probability of a uniform draw; the rest is proportional to learning progress.
        seed: Seed or generator for the draws.
        impl: Code paths (``curriculum_full_scan``, ``label_dict_growth``); default: the reference.
        tasks: The task family the ids index.

    ``work`` counts tree nodes (and, on the full-scan path, slots) touched: per episode it is
    ``2 * depth + 1`` on the reference path and grows with ``max_tasks`` on the full-scan path.
    """

    def __init__(
        self,
        num_tasks: int,
        *,
        max_tasks: int = 1024,
        ema_fast: float = 0.1,
        ema_slow: float = 0.02,
        explore: float = 0.2,
        seed: int | np.random.Generator | None = None,
        impl: ArenaImpl | None = None,
        tasks: TaskFamily | None = None,
    ) -> None:
        super().__init__(num_tasks, seed=seed, impl=impl, tasks=tasks)
        if max_tasks < num_tasks:
            raise ValueError(
                f"the task family has {num_tasks} tasks but the pool has max_tasks={max_tasks} slots; "
                "raise curriculum.max_tasks or shrink the family's lists"
            )
        for name, value in (("ema_fast", ema_fast), ("ema_slow", ema_slow), ("explore", explore)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value!r}")
        self.max_tasks = max_tasks
        self.ema_fast = float(ema_fast)
        self.ema_slow = float(ema_slow)
        self.explore = float(explore)
        # The slot table: one row per slot, task i in slot i; slots >= num_tasks are empty (inactive).
        self._slot_task = np.full(max_tasks, -1, dtype=np.int64)
        self._slot_task[:num_tasks] = np.arange(num_tasks)
        self._active = np.zeros(max_tasks, dtype=bool)
        self._active[:num_tasks] = True
        self._fast = np.zeros(max_tasks)
        self._slow = np.zeros(max_tasks)
        self._count = np.zeros(max_tasks, dtype=np.int64)
        self._tree = SumTree(max_tasks)
        self._depth = self._tree.depth

    # --- the per-episode hot path ------------------------------------------------------------------------

    def sample(self) -> int:
        """Draw the next task: uniform with probability ``explore`` (or while there is no progress)."""
        self.samples += 1
        total = self._tree.total
        if total <= 0.0 or self.rng.random() < self.explore:
            self.work += 1
            return int(self.rng.integers(self.num_tasks))
        before = self._tree.nodes_touched
        slot = self._tree.find(self.rng.random() * total)
        self.work += self._tree.nodes_touched - before
        return int(self._slot_task[slot])

    def update(self, task: int, score: float) -> None:
        """Fold ``score`` into the task's averages and refresh its weight (O(log max_tasks))."""
        t = self._check_task(task)
        score = float(score)
        slot = t  # task i lives in slot i
        if self._count[slot] == 0:
            self._fast[slot] = score
            self._slow[slot] = score
        else:
            self._fast[slot] += self.ema_fast * (score - self._fast[slot])
            self._slow[slot] += self.ema_slow * (score - self._slow[slot])
        self._count[slot] += 1
        self._record_label(t, score)
        self.episodes += 1
        before = self._tree.nodes_touched
        if self._full_scan:
            self._invalidate_and_rescan()
        else:
            self._tree.set(slot, abs(self._fast[slot] - self._slow[slot]))
        self.work += self._tree.nodes_touched - before

    # --- the regressed full-scan path (case 004) ---------------------------------------------------------

    def _slot_state(self, i: int) -> SlotState:
        return SlotState(
            int(self._slot_task[i]),
            bool(self._active[i]),
            float(self._fast[i]),
            float(self._slow[i]),
            int(self._count[i]),
        )

    def _all_tracked_tasks(self) -> list[int]:
        # Case 004's get_all_tracked_tasks(): read every slot's state record to find the active ones.
        out = []
        for i in range(self.max_tasks):
            state = self._slot_state(i)
            if state.is_active:
                out.append(state.task_id)
        self.work += self.max_tasks
        self.slots_scanned += self.max_tasks
        return out

    def _invalidate_and_rescan(self) -> None:
        # The cache is invalidated on every update, and the distribution recomputed from scratch: scan all
        # slots, recompute every active task's learning progress, rebuild the whole tree. The weights (and
        # so the distribution) are exactly those of the incremental path; only the cost differs.
        task_ids = np.asarray(self._all_tracked_tasks(), dtype=np.int64)
        weights = np.zeros(self.max_tasks)
        weights[task_ids] = np.abs(self._fast[task_ids] - self._slow[task_ids])
        self._tree.rebuild(weights)

    # --- inspection (O(num_tasks), not for the hot path) -------------------------------------------------

    def learning_progress(self) -> np.ndarray:
        """``(num_tasks,)`` current ``|fast - slow|`` per task."""
        n = self.num_tasks
        return np.abs(self._fast[:n] - self._slow[:n])

    def probabilities(self) -> np.ndarray:
        """``(num_tasks,)`` the probability that the next ``sample()`` returns each task (from the tree)."""
        n = self.num_tasks
        weights = self._tree.weights()[:n]
        total = self._tree.total
        uniform = np.full(n, 1.0 / n)
        if total <= 0.0:
            return uniform
        return self.explore * uniform + (1.0 - self.explore) * weights / total

    def task_scores(self) -> dict[str, np.ndarray]:
        """``(num_tasks,)`` arrays: ``fast``, ``slow``, ``count`` (episodes per task)."""
        n = self.num_tasks
        return {"fast": self._fast[:n].copy(), "slow": self._slow[:n].copy(), "count": self._count[:n].copy()}

    def stats(self) -> dict[str, float]:
        """Counters plus the pool's size and occupancy."""
        out = super().stats()
        out.update(max_tasks=float(self.max_tasks), active_tasks=float(self._active.sum()))
        return out


def make_curriculum(
    config: CurriculumConfig | dict[str, Any],
    *,
    seed: int | np.random.Generator | None = None,
    impl: ArenaImpl | None = None,
) -> LearningProgressCurriculum | RandomCurriculum | None:
    """Build the curriculum a config section describes (``None`` for ``kind="none"``).

    Args:
        config: The ``curriculum`` section, or a whole config holding one under the key ``curriculum``
            (what a subject's ``make_curriculum(config)`` receives).
        seed: Seed or generator for the curriculum's draws.
        impl: Code paths (``curriculum_full_scan``, ``label_dict_growth``).

    The returned curriculum carries its :class:`TaskFamily` as ``.tasks``, which the environment reads to
    turn a task id into a map.
    """
    if isinstance(config, dict):
        section = config.get("curriculum", config)
        config = (
            section if isinstance(section, CurriculumConfig) else CurriculumConfig.from_dict(dict(section))
        )
    if config.kind == "none":
        return None
    family = TaskFamily.from_config(config)
    if config.kind == "random":
        return RandomCurriculum(len(family), seed=seed, impl=impl, tasks=family)
    return LearningProgressCurriculum(
        len(family),
        max_tasks=config.max_tasks,
        ema_fast=config.ema_fast,
        ema_slow=config.ema_slow,
        explore=config.explore,
        seed=seed,
        impl=impl,
        tasks=family,
    )
