"""The arena: a vectorized numpy gridworld with a resource chain ore -> battery -> heart (Gymnasium 1.x).

A small cousin of the Metta arena of case files 000/001, with one agent per environment and all ``num_envs``
environments stepped together by array operations (no per-environment Python loop in ``step`` or in resets).

The world
    A square interior of ``size x size`` cells inside a border wall, holding mines, generators, altars and
    optional internal wall blocks at random cells, and the agent. Actions: 0 noop, 1 up, 2 down, 3 left,
    4 right. The agent moves into empty cells only; **moving into an object uses it** and leaves the agent
    where it was:

    - mine: +1 ore (if ore < ``ore_cap`` and the mine is not cooling down),
    - generator: 1 ore -> 1 battery (if it holds ore and battery < ``battery_cap``),
    - altar: ``altar_cost`` batteries -> 1 heart (``heart.get``, the metric the investigation tracks).

    Rewards are per unit gained, from ``config.rewards`` (shaped as in case 001: ore 0.1, battery 0.8,
    heart 1.0), minus ``time_penalty`` per step. Episodes never terminate; they are truncated at their
    length limit (``max_steps``; the first episode after ``reset()`` gets a random limit in
    ``[1, max_steps]`` when ``desync_episodes``, so resets spread out across the vector).

Observation (float32 vector; ``frame_stack`` frames side by side, oldest first)
    One frame is ``4 * (2r+1)^2`` one-hot channels (wall, mine, generator, altar; empty is all zeros) of the
    egocentric window of radius ``r = view_radius`` (cells row-major, the agent at the center), then
    ``ore / ore_cap``, ``battery / battery_cap``, ``altar_cost / battery_cap``, ``ore > 0``,
    ``battery >= altar_cost``, the fraction of the episode's steps left, and with ``compass`` the offsets
    ``dy_mine, dy_generator, dy_altar, dx_mine, dx_generator, dx_altar`` (object minus agent, divided by
    ``S - 1`` for the largest map size ``S``, so in [-1, 1]) to the first-placed mine, generator and altar
    of the map. Hearts are counted, not carried: they are not observed.

Autoreset (``AutoresetMode.SAME_STEP``)
    After a step in which an environment's episode ends, the returned observation is the new episode's
    first one; ``info["final_obs"]`` is a dense ``(num_envs, obs_dim)`` array holding the last observation
    of each episode that ended in that step (rows where ``info["_final_obs"]``; the other rows are zero). On every such step
    ``info["episode"]`` holds ``(num_envs,)`` arrays ``r`` (return), ``l`` (length), ``heart.get``,
    ``ore.get``, ``battery.get`` and ``task``, masked by ``info["_episode"]``; every finished episode is also
    appended to a log that :meth:`ArenaVecEnv.pop_episodes` drains, so a trainer that ignores ``info`` (the
    CleanRL ``final_info`` trap under gymnasium 1.x) still loses nothing.

Tasks and curricula
    A task is a map variant (size, object counts, altar cost) from a :class:`TaskFamily`. With a curriculum,
    every reset draws its task with ``curriculum.sample()`` and reports the finished episode's ``heart.get``
    with ``curriculum.update(task, score)``; without one, every episode uses the config's own map. Random
    layouts for autoresets are prepared in batches per task (building one map costs about as many array
    operations as building hundreds), so an autoreset mostly copies a prepared map into place.

Regressed code paths live in :class:`ArenaImpl` (never in the config): see its fields.

Why one file of about 1,000 lines: the environment's step, its resets, its observation and its fault code
paths share the same arrays and are read together (a fault is a few lines inside the step it changes); the
curriculum, the config sections, the expert and the benchmarks already live beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rlaudit.demo.curriculum import (
    TASK_FIELDS,
    Curriculum,
    CurriculumConfig,
    LearningProgressCurriculum,
    RandomCurriculum,
    SumTree,
    TaskFamily,
    make_curriculum,
)
from rlaudit.demo.sections import ConfigSection

__all__ = [
    "ACTION_NAMES",
    "TASK_FIELDS",
    "ArenaConfig",
    "ArenaImpl",
    "ArenaVecEnv",
    "Curriculum",
    "CurriculumConfig",
    "LearningProgressCurriculum",
    "RandomCurriculum",
    "SumTree",
    "TaskFamily",
    "make_arena",
    "make_curriculum",
]

# Cell codes of the grid.
EMPTY, WALL, MINE, GENERATOR, ALTAR = 0, 1, 2, 3, 4
ACTION_NAMES: tuple[str, ...] = ("noop", "up", "down", "left", "right")
REWARD_KEYS: tuple[str, ...] = ("ore", "battery", "heart")
EPISODE_KEYS: tuple[str, ...] = ("r", "l", "heart.get", "ore.get", "battery.get", "task")
_CHANNELS = 4  # one-hot channels per window cell: wall, mine, generator, altar
_COUNT_BITS = 20  # bits per resource count in the packed per-episode counter
_COUNT_MASK = (1 << _COUNT_BITS) - 1
_COUNT_SHIFTS = np.array([[2 * _COUNT_BITS], [0], [_COUNT_BITS]])  # heart.get, ore.get, battery.get
_RETURN_ROWS = [0, 2, 3, 1]  # rows of the integer statistics: l, ore.get, battery.get, heart.get
# Rows of the per-environment state matrix (see _allocate_state).
_STATE_ROWS: tuple[str, ...] = (
    "row", "inv", "counts", "task", "map_id", "start", "deadline", "tv_mine", "tv_generator", "tv_altar",
    "tc_mine", "tc_generator", "tc_altar",
)  # fmt: skip
_TARGET_V, _TARGET_CELLS = slice(7, 10), slice(10, 13)
#: Inventory features of the observation, in order (after the window), then the time left.
_INVENTORY_FEATURES: tuple[str, ...] = ("ore", "battery", "altar_cost", "has_ore", "can_make_heart")


@dataclass
class ArenaConfig(ConfigSection):
    """The environment (the ``env`` config section). Map fields describe the map used without a curriculum."""

    section: ClassVar[str] = "env"

    size: int = 7  # side of the square interior, in cells (a border wall surrounds it)
    mines: int = 2  # mines on the map: moving into one gives 1 ore
    generators: int = 1  # generators: moving into one turns 1 ore into 1 battery
    altars: int = 1  # altars: moving into one turns altar_cost batteries into 1 heart
    walls: int = 0  # internal wall blocks at random cells
    altar_cost: int = 1  # batteries an altar takes per heart (case 001's fix set it to 1)
    max_steps: int = 96  # episode length limit (truncation), in steps
    desync_episodes: bool = True  # the first episode after reset() gets a random length in [1, max_steps]
    ore_cap: int = 3  # inventory limit: a mine gives nothing while the agent holds this much ore
    battery_cap: int = 3  # inventory limit for batteries (must be >= every task's altar cost)
    heart_cap: int = 255  # hearts an episode can make; the altars stop working at the cap
    mine_cooldown: int = 0  # steps a mine rests after giving ore (0: usable every step)
    generator_cooldown: int = 0  # steps a generator rests after a conversion (0: usable every step)
    rewards: dict[str, float] = field(
        default_factory=lambda: {"ore": 0.1, "battery": 0.8, "heart": 1.0}
    )  # reward per unit gained (shaped as in case 001); a missing key means 0
    time_penalty: float = 0.0  # subtracted from every step's reward
    view_radius: int = 1  # the egocentric window spans (2 * view_radius + 1)^2 cells (at most 3)
    compass: bool = True  # append the offsets to the map's first-placed mine, generator and altar
    frame_stack: int = 1  # observations stacked along the feature axis, oldest first

    def __post_init__(self) -> None:
        for name in ("size", "max_steps", "ore_cap", "battery_cap", "heart_cap", "frame_stack"):
            _require_int(self, name, 1)
        if self.max_steps > _COUNT_MASK:
            raise ValueError(f"env.max_steps must be <= {_COUNT_MASK}, got {self.max_steps}")
        for name in ("mines", "generators", "altars"):
            _require_int(self, name, 1)
        for name in ("walls", "mine_cooldown", "generator_cooldown", "view_radius"):
            _require_int(self, name, 0)
        if self.view_radius > 3:
            raise ValueError(f"env.view_radius must be <= 3 (a 7x7 window), got {self.view_radius}")
        _require_int(self, "altar_cost", 1)
        if self.size < 2:
            raise ValueError(f"env.size must be >= 2, got {self.size}")
        if not isinstance(self.rewards, dict):
            raise TypeError(f"env.rewards must be a dict like {{'ore': 0.1, ...}}, got {self.rewards!r}")
        unknown = sorted(set(self.rewards) - set(REWARD_KEYS))
        if unknown:
            raise ValueError(
                f"unknown key(s) {unknown} in env.rewards; known keys: {list(REWARD_KEYS)} (a missing key "
                "means a reward of 0)"
            )
        self.rewards = {k: float(v) for k, v in self.rewards.items()}
        self.time_penalty = float(self.time_penalty)
        self.desync_episodes = bool(self.desync_episodes)
        self.compass = bool(self.compass)

    def family(self) -> TaskFamily:
        """The one-task family of this config's own map."""
        return TaskFamily.single(
            self.size, self.mines, self.generators, self.altars, self.walls, self.altar_cost
        )


def _require_int(cfg: ArenaConfig, name: str, minimum: int) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"env.{name} must be an integer >= {minimum}, got {value!r}")
    setattr(cfg, name, int(value))


@dataclass(frozen=True)
class ArenaImpl(ConfigSection):
    """Code paths of the arena and its curriculum. The defaults are the correct behavior.

    These are *code* changes (the fault catalog's regressions), deliberately kept out of :class:`ArenaConfig`:
    an audit that compares configs cannot see them, only their effects.
    """

    section: ClassVar[str] = "arena impl"

    # Case 001: whenever any sub-environment resets, every static buffer is reallocated and recomputed, the
    # state of every map copied over and its derived data recomputed, and the resetting environments'
    # statistic accumulators recreated before the finished episode is read (its reported return and resource
    # counts come out as 0, or as the time penalty alone).
    rebuild_on_reset: bool = False
    # Case 001: every episode (not only each environment's first) is truncated at a random length.
    desync_truncates: bool = False
    # Case 004: every curriculum update invalidates the distribution and rescans all max_tasks slots.
    curriculum_full_scan: bool = False
    # Case 004: a label entry per episode, never pruned.
    label_dict_growth: bool = False
    # The observation buffer is allocated without its dtype (np.empty's default float64) while the declared Box
    # stays float32: the values are the same, the array is not what the space says (Gymnasium's passive env
    # checker warns about exactly this: "obs dtype ... does not match the observation space").
    obs_default_dtype: bool = False


class ArenaVecEnv(VectorEnv):
    """``num_envs`` arenas stepped together; see the module docstring for the rules.

    Args:
        num_envs: Number of environments.
        config: The ``env`` config section.
        seed: Seed used by the first ``reset()`` that is given none.
        curriculum: Chooses each episode's task; must carry its :class:`TaskFamily` as ``.tasks``. ``None``:
            every episode uses ``config``'s own map (task 0).
        impl: Code paths (default: the reference behavior).
        max_logged_episodes: Finished episodes kept for :meth:`pop_episodes` between two calls; beyond it the
            oldest are dropped and counted in ``episodes_dropped``.

    Shapes: observations ``(num_envs, obs_dim)`` float32, actions ``(num_envs,)`` ints in ``[0, 5)``,
    rewards ``(num_envs,)`` float32, terminations/truncations ``(num_envs,)`` bool.
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        config: ArenaConfig | dict[str, Any],
        *,
        seed: int | None = None,
        curriculum: Curriculum | None = None,
        impl: ArenaImpl | None = None,
        max_logged_episodes: int = 1_000_000,
    ) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs!r}")
        cfg = config if isinstance(config, ArenaConfig) else ArenaConfig.from_dict(dict(config))
        self.config = cfg
        self.impl = impl if impl is not None else ArenaImpl()
        self.curriculum = curriculum
        if curriculum is None:
            family = cfg.family()
        else:
            family = getattr(curriculum, "tasks", None)
            if not isinstance(family, TaskFamily):
                raise TypeError(
                    f"the curriculum {type(curriculum).__name__} has no TaskFamily in `.tasks`; the arena needs "
                    "it to turn task ids into maps. Build curricula with make_curriculum(), or set .tasks."
                )
        costs = family.params[:, TASK_FIELDS.index("altar_cost")]
        if costs.max() > cfg.battery_cap:
            raise ValueError(
                f"a task needs altar_cost={int(costs.max())} batteries but env.battery_cap={cfg.battery_cap}: "
                "no heart could ever be made; raise battery_cap or lower the altar cost"
            )
        self.tasks = family
        self.num_envs = int(num_envs)
        self._seed = seed
        self._rng: np.random.Generator | None = None
        self._max_logged = int(max_logged_episodes)

        # Geometry: the largest map of the family, padded by walls so the observation window never leaves it.
        self._S = int(family.params[:, 0].max())
        self._r = cfg.view_radius
        self._pad = max(1, self._r)
        self._W = self._S + 2 * self._pad
        self._G = self._W * self._W
        self._P = self._S * self._S
        self._d_win = _CHANNELS * (2 * self._r + 1) ** 2
        self._d_tail = len(_INVENTORY_FEATURES) + 1 + (6 if cfg.compass else 0)
        self._d1 = self._d_win + self._d_tail  # one frame
        self.obs_dim = self._d1 * cfg.frame_stack

        low = np.zeros(self._d1, dtype=np.float32)
        low[self._d_win + len(_INVENTORY_FEATURES) + 1 :] = -1.0  # compass offsets
        low = np.tile(low, cfg.frame_stack)
        self.single_observation_space = spaces.Box(low, np.ones_like(low), dtype=np.float32)
        self.single_action_space = spaces.Discrete(len(ACTION_NAMES))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        self.static_builds = 0  # how many times the static buffers were built (1 on the reference path)
        self.episodes_dropped = 0  # finished episodes dropped from an undrained log
        self._log: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        self._logged = 0
        self._vstep = 0  # step() calls since construction
        self._needs_reset = True
        self._build_static()
        self._allocate_state()

    # --- construction --------------------------------------------------------------------------------------

    def _build_static(self) -> None:
        """Lookup tables that depend only on the config and the task family."""
        cfg, S, W, G, P, pad, r = self.config, self._S, self._W, self._G, self._P, self._pad, self._r
        n = self.num_envs
        self.static_builds += 1
        cell = np.arange(P)
        cell_y, cell_x = cell // S, cell % S
        self._cell_to_grid = (pad + cell_y) * W + (pad + cell_x)
        # The window is read a row at a time: every grid cell holds the code of the 2r+1 cells of its row
        # segment, sum_j code[x - r + j] * 5**j (see _row_codes), and a table maps that code to the segment's
        # one-hot channels, a block of 4 * (2r+1) float32 that one take copies as a single item.
        span = 2 * r + 1
        self._row_offsets = (np.arange(-r, r + 1, dtype=np.intp) * W)[:, None]  # (2r+1, 1) rows of a window
        self._row_code_dtype = np.uint8 if 5**span <= 256 else np.uint16 if 5**span <= 65536 else np.uint32
        self._row_powers = 5 ** np.arange(span)
        digits = (np.arange(5**span)[:, None] // self._row_powers) % 5  # (5**span, span) cell codes
        onehot = np.zeros((5, _CHANNELS), dtype=np.float32)
        onehot[np.arange(1, 5), np.arange(4)] = 1.0  # EMPTY -> zeros; WALL, MINE, GENERATOR, ALTAR
        blocks = np.ascontiguousarray(onehot[digits].reshape(5**span, span * _CHANNELS))
        self._row_table = blocks.view(np.dtype((np.void, blocks.shape[1] * 4))).reshape(-1)

        params = self.tasks.params
        sizes = np.unique(params[:, 0])
        self._task_size_index = np.searchsorted(sizes, params[:, 0])
        # A smaller map sits centered in the largest one; cells outside it are walls.
        self._templates = np.full((len(sizes), G), WALL, dtype=np.uint8)
        self._outside = np.zeros((len(sizes), P))  # added to sort keys: pushes outside cells past inside ones
        for i, s in enumerate(sizes):
            o = (S - int(s)) // 2
            inside = (cell_y >= o) & (cell_y < o + s) & (cell_x >= o) & (cell_x < o + s)
            self._templates[i, self._cell_to_grid[inside]] = EMPTY
            self._outside[i, ~inside] = 2.0
        counts = params[:, 1:5]  # mines, generators, altars, walls
        n_objects = counts.sum(axis=1)
        self._M = int(n_objects.max()) + 1  # ranks used per map: the objects, then the agent
        codes = np.full((len(params), self._M), EMPTY, dtype=np.uint8)
        for t, row in enumerate(counts):
            codes[t, : n_objects[t]] = np.repeat([MINE, GENERATOR, ALTAR, WALL], row)
        self._rank_codes = codes
        self._agent_rank = n_objects.astype(np.intp)
        # Rank of the first mine, generator and altar of each task: the objects the compass points at.
        self._kind_rank = np.stack([0 * counts[:, 0], counts[:, 0], counts[:, 0] + counts[:, 1]], axis=1)
        self._one_size = len(sizes) == 1  # no outside cells to push past the inside ones
        self._full_ranks = bool((n_objects == n_objects[0]).all())  # every task fills all M - 1 object ranks
        task_cost = params[:, TASK_FIELDS.index("altar_cost")]
        self._dg = np.array([0, -W, W, -1, 1], dtype=np.intp)  # grid-index delta per action

        # The inventory is one integer per environment, inv = ore + (O+1) * (battery + (B+1) * (cost-1)), so
        # that every interaction is a lookup in tables indexed by code * n_inv + inv (no branching per env).
        oc, bc = cfg.ore_cap, cfg.battery_cap
        n_inv = (oc + 1) * (bc + 1) * bc
        inv = np.arange(n_inv)
        ore, battery, cost = inv % (oc + 1), (inv // (oc + 1)) % (bc + 1), inv // ((oc + 1) * (bc + 1)) + 1
        # A new episode's state columns per task: its inventory code (no ore, no battery, its altar cost),
        # its id, zero counts; the rest is filled in per map by _reset_envs.
        self._task_state = np.zeros((len(_STATE_ROWS), len(params)), dtype=np.int64)
        self._task_state[1] = (oc + 1) * (bc + 1) * (task_cost - 1)
        self._task_state[3] = np.arange(len(params))
        self._inv_features = np.stack([ore / oc, battery / bc, cost / bc, ore > 0, battery >= cost]).astype(
            np.float32
        )  # (5, n_inv), rows in _INVENTORY_FEATURES order
        self._code_base = (np.arange(5) * n_inv).astype(np.intp)
        event = np.zeros((5, n_inv), dtype=np.intp)  # 0 nothing, 1 ore mined, 2 battery made, 3 heart made
        event[MINE, ore < oc] = 1
        event[GENERATOR, (ore > 0) & (battery < bc)] = 2
        event[ALTAR, battery >= cost] = 3
        d_inv = np.zeros((5, n_inv), dtype=np.intp)
        d_inv[MINE][event[MINE] == 1] = 1
        d_inv[GENERATOR][event[GENERATOR] == 2] = (oc + 1) - 1
        d_inv[ALTAR][event[ALTAR] == 3] = -(oc + 1) * cost[event[ALTAR] == 3]
        rw = cfg.rewards
        per_event = np.array([0.0, rw.get("ore", 0.0), rw.get("battery", 0.0), rw.get("heart", 0.0)])
        self._event = event.reshape(-1)
        self._d_inv = d_inv.reshape(-1)
        self._reward = (per_event[event] - cfg.time_penalty).astype(np.float32).reshape(-1)
        step_reward = (per_event - cfg.time_penalty).astype(np.float32).astype(np.float64)
        # return = l * r(no event) + sum over events of count * (r(event) - r(no event))
        self._return_weights = np.concatenate([step_reward[:1], step_reward[1:] - step_reward[0]])
        # Per-episode resource counts packed into one int64: ore.get + battery.get << 20 + heart.get << 40.
        increments = np.array([0, 1, 1 << _COUNT_BITS, 1 << (2 * _COUNT_BITS)], dtype=np.int64)
        self._count_inc = increments[event].reshape(-1)

        # Compass: cells get a second index v = y * V + x with V = 2S, so that the difference of two cells'
        # v decodes uniquely into (dy, dx); the table maps v differences (shifted by _v_shift) to offsets.
        V = 2 * S
        self._v_shift = (S - 1) * V + (S - 1)
        dv = np.arange(2 * self._v_shift + 1) - self._v_shift
        dy = np.floor_divide(dv + (S - 1), V)
        dx = dv - dy * V
        self._compass_table = (np.stack([dy, dx]) / max(S - 1, 1)).astype(np.float32)  # (2, n_dv)
        self._v_of_cell = cell_y * V + cell_x + self._v_shift
        self._v_of_grid = np.zeros(G, dtype=np.intp)
        self._v_of_grid[self._cell_to_grid] = cell_y * V + cell_x
        self._v_of_row = np.tile(self._v_of_grid, n)  # indexed like the flattened grids of all environments
        self._base_g = np.arange(n, dtype=np.intp) * G
        self._time_scale = 1.0 / cfg.max_steps
        self._cooldowns = cfg.mine_cooldown > 0 or cfg.generator_cooldown > 0
        self._heart_limited = cfg.heart_cap < cfg.max_steps  # else the cap can never be reached

    def _allocate_state(self) -> None:
        n, k = self.num_envs, self.config.frame_stack
        self._grid = np.full((n, self._G), WALL, dtype=np.uint8)
        self._grid_flat = self._grid.reshape(-1)
        self._row_code = np.zeros((n, self._G), dtype=self._row_code_dtype)  # see _build_static
        self._row_code_flat = self._row_code.reshape(-1)
        # The per-environment integers live in the rows of one matrix, so that a reset writes (and an
        # episode's end reads) them with a single scatter or gather; the attributes are views of its rows.
        self._state = np.zeros((len(_STATE_ROWS), n), dtype=np.int64)
        st = dict(zip(_STATE_ROWS, self._state, strict=True))
        self._row = st["row"]  # the agent's cell, as an index into the flattened grids
        self._inv = st["inv"]  # inventory code (see _build_static)
        self._ep_counts = st["counts"]  # packed ore/battery/heart counts of the episode
        self._task = st["task"]
        self.map_ids = st["map_id"]  # changes whenever an environment gets a new map
        self._start = st["start"]  # step() count at which the episode started
        self._deadline = st["deadline"]  # step() count at which it is truncated
        self._target_v = self._state[_TARGET_V]  # compass targets' v + _v_shift (see _build_static)
        self._target_cells = self._state[_TARGET_CELLS]  # the interior cells the compass points at
        self._next_deadline = 0
        self._maps_built = 0
        self._ready_at = np.zeros(n * self._G, dtype=np.int64) if self._cooldowns else None
        self._frames = np.zeros((k, n, self._d1), dtype=np.float32) if k > 1 else None  # ring, frame_stack
        # Maps prepared for autoresets, _pool_size per task (task t owns slots t * size ... (t+1) * size - 1).
        tasks = len(self.tasks)
        self._pool_size = int(min(n, max(8, -(-2 * n // tasks))))
        slots = tasks * self._pool_size
        self._pool_grid = np.zeros((slots, self._G), dtype=np.uint8)
        self._pool_row_code = np.zeros((slots, self._G), dtype=self._row_code_dtype)
        self._pool_state = np.zeros((len(_STATE_ROWS), slots), dtype=np.int64)
        self._pool_frame = np.zeros((slots, self._d1), dtype=np.float32)
        self._pool_next = np.full(tasks, self._pool_size, dtype=np.int64)  # next unused slot per task
        self._head = 0

    # --- gymnasium API -------------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode in every environment.

        Args:
            seed: Reseeds the environment's generator (``None``: continue it; the first reset uses the
                constructor's seed). The curriculum keeps its own generator and learned state.
            options: Not used; must be ``None`` or empty.

        Returns:
            ``(obs, info)``: obs ``(num_envs, obs_dim)`` float32; info is empty.
        """
        if options:
            raise ValueError(f"ArenaVecEnv.reset takes no options, got {sorted(options)}")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._np_random_seed = seed
        elif self._rng is None:
            self._rng = np.random.default_rng(self._seed)
            self._np_random_seed = self._seed
        self._np_random = self._rng
        ids = np.arange(self.num_envs)
        self._pool_next[:] = self._pool_size  # maps prepared from the previous stream are dropped
        self._reset_envs(ids, self._next_tasks(self.num_envs), first=True)
        obs = self._frame()
        if self._frames is not None:
            self._frames[:] = obs[None]
            obs = np.tile(obs, (1, self.config.frame_stack))
        self._needs_reset = False
        return obs, {}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Advance every environment by one step (SAME_STEP autoreset).

        Args:
            actions: ``(num_envs,)`` integers in ``[0, 5)``.

        Returns:
            ``(obs, rewards, terminations, truncations, info)``; see the module docstring for ``info``.
        """
        if self._needs_reset:
            raise RuntimeError("ArenaVecEnv.step() called before reset(); call reset() first")
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({self.num_envs},), got dtype {a.dtype} shape "
                f"{a.shape}; pass one action in [0, 5) per environment"
            )
        try:
            if a.dtype.kind == "i" and a.min() < 0:
                raise IndexError  # take() would wrap a negative index around
            delta = self._dg.take(a)  # raises IndexError for actions >= 5
        except IndexError:
            raise ValueError(
                f"actions must be in [0, {len(ACTION_NAMES)}), got values in [{a.min()}, {a.max()}]"
            ) from None
        self._vstep += 1

        # Move into the target cell if it is empty; otherwise use what is there (or bump into a wall).
        cell = self._row + delta
        code = self._grid_flat.take(cell)
        np.copyto(self._row, cell, where=code == EMPTY)
        if self._cooldowns or self._heart_limited:
            code = self._unusable_as_walls(code, cell)
        idx = self._code_base.take(code)
        idx += self._inv
        self._inv += self._d_inv.take(idx)
        reward = self._reward.take(idx)
        self._ep_counts += self._count_inc.take(idx)
        if self._cooldowns:
            self._start_cooldowns(idx, cell)

        truncated = self._deadline <= self._vstep
        terminated = np.zeros(self.num_envs, dtype=bool)
        obs = self._frame()
        if self._frames is not None:
            obs = self._stack(obs)
        info: dict[str, Any] = {}
        if self._vstep >= self._next_deadline:
            info = self._end_episodes(np.flatnonzero(truncated), truncated, obs)
        return obs, reward, terminated, truncated, info

    # --- episodes ------------------------------------------------------------------------------------------

    def pop_episodes(self) -> dict[str, np.ndarray]:
        """Every episode finished since the last call, in finishing order, and clear the log.

        Returns:
            ``(E,)`` arrays: ``vector_step`` (the ``step()`` call that finished it, counted from
            construction), ``env`` (index), and :data:`EPISODE_KEYS` (``r`` float64; ``l``, the ``*.get`` counts
            and ``task`` int64). ``info["episode"]`` holds the same keys and dtypes.
        """
        chunks = self._log
        self._log = []
        self._logged = 0
        if not chunks:
            out = {"vector_step": np.zeros(0, dtype=np.int64), "env": np.zeros(0, dtype=np.int64)}
            out["r"] = np.zeros(0)
            out.update({k: np.zeros(0, dtype=np.int64) for k in EPISODE_KEYS[1:]})
            return out
        ints = np.concatenate([c[3] for c in chunks], axis=1)
        return {
            "vector_step": np.concatenate([np.full(len(c[1]), c[0], dtype=np.int64) for c in chunks]),
            "env": np.concatenate([c[1] for c in chunks]).astype(np.int64),
            "r": np.concatenate([c[2] for c in chunks]),
            **dict(zip(EPISODE_KEYS[1:], ints, strict=True)),
        }

    def _end_episodes(self, ids: np.ndarray, done: np.ndarray, obs: np.ndarray) -> dict[str, Any]:
        """Report the episodes of ``ids``, reset them, and patch their rows of ``obs`` in place."""
        n = self.num_envs
        final_obs = np.zeros_like(obs)  # rows of the environments that did not finish stay zero
        final_obs[ids] = obs[ids]
        info: dict[str, Any] = {"final_obs": final_obs, "_final_obs": done.copy()}
        if self.impl.rebuild_on_reset:
            self._rebuild_everything(ids)
        # Read the finished episodes' statistics before anything is reset.
        # Integer statistics as rows of one (5, len(ids)) array: l, heart.get, ore.get, battery.get, task.
        ended = self._state.take(ids, axis=1)
        ints = np.empty((5, len(ids)), dtype=np.int64)
        np.subtract(self._vstep, ended[5], out=ints[0])
        np.right_shift(ended[2], _COUNT_SHIFTS, out=ints[1:4])
        ints[2:4] &= _COUNT_MASK
        ints[4] = ended[3]
        # Every step's reward is a function of its event alone, so the return is the counts times the
        # (float32) rewards the steps returned: no per-step accumulator needed.
        r = self._return_weights @ ints[_RETURN_ROWS]
        full_r = np.zeros(n)
        full_r[ids] = r
        full_ints = np.zeros((5, n), dtype=np.int64)
        full_ints[:, ids] = ints
        info["episode"] = {"r": full_r, **dict(zip(EPISODE_KEYS[1:], full_ints, strict=True))}
        info["_episode"] = done.copy()
        self._append_log((self._vstep, ids, r, ints))

        if self.curriculum is not None:
            update = self.curriculum.update
            for t, score in zip(ints[4].tolist(), ints[1].tolist(), strict=True):
                update(t, float(score))
        first = self._reset_envs(ids, self._next_tasks(len(ids)), first=False)
        if self._frames is not None:
            self._frames[:, ids] = first[None]
            obs[ids] = np.tile(first, (1, self.config.frame_stack))
        else:
            obs[ids] = first
        return info

    def _append_log(self, chunk: tuple[int, np.ndarray, np.ndarray, np.ndarray]) -> None:
        self._log.append(chunk)
        self._logged += len(chunk[1])
        while self._logged > self._max_logged and len(self._log) > 1:
            dropped = self._log.pop(0)
            self._logged -= len(dropped[1])
            self.episodes_dropped += len(dropped[1])

    def _next_tasks(self, count: int) -> np.ndarray:
        if self.curriculum is None:
            return np.zeros(count, dtype=np.int64)
        sample = self.curriculum.sample
        tasks = np.fromiter((sample() for _ in range(count)), dtype=np.int64, count=count)
        if tasks.min() < 0 or tasks.max() >= len(self.tasks):
            raise ValueError(
                f"the curriculum returned task ids in [{tasks.min()}, {tasks.max()}] but its family has "
                f"{len(self.tasks)} tasks"
            )
        return tasks

    # --- maps and observations -----------------------------------------------------------------------------

    def _generate_maps(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Fresh random maps of ``tasks`` (vectorized over them), with their first observation frames.

        Returns:
            ``grids (R, G)`` uint8, ``row codes (R, G)``, the new episodes' state columns
            ``(len(_STATE_ROWS), R)`` with rows *local* to a grid (no environment offset) and deadlines
            relative to the start (``max_steps``), and the first frames ``(R, d1)`` (a full episode ahead).
        """
        rng = self._rng
        assert rng is not None
        R, G = len(tasks), self._G
        size_index = self._task_size_index[tasks]
        # A random order of the interior cells, cells outside the task's (smaller) map last: rank i of the
        # order holds the task's i-th object, and the agent starts on the rank after the last object.
        keys = rng.random((R, self._P))
        if not self._one_size:
            keys += self._outside[size_index]
        order = np.argsort(keys, axis=1)[:, : self._M]
        grids = np.repeat(self._templates[:1], R, axis=0) if self._one_size else self._templates[size_index]
        local = self._cell_to_grid[order]  # (R, M) cells of the ranks
        flat = local + (np.arange(R) * G)[:, None]
        if self._full_ranks:  # the objects fill ranks 0 .. M-2 of every map
            grids.reshape(-1)[flat[:, :-1]] = self._rank_codes[tasks, :-1]
        else:
            codes = self._rank_codes[tasks]
            placed = codes != EMPTY
            grids.reshape(-1)[flat[placed]] = codes[placed]
        row_codes = self._row_codes(grids)

        # The new episodes' state: task constants (inventory, task id, zero counts), then per map.
        block = self._task_state.take(tasks, axis=1)
        arange = np.arange(R)
        block[0] = local[arange, self._agent_rank[tasks]]
        block[6] = self.config.max_steps
        if self.config.compass:
            # The compass points at the first-placed (so a random) mine, generator and altar of the map.
            targets = order[arange[:, None], self._kind_rank[tasks]].T  # (3, R) interior cells
            block[_TARGET_CELLS] = targets
            block[_TARGET_V] = self._v_of_cell.take(targets)
        frame_state = block.copy()
        frame_state[0] += arange * G  # rows into the flattened batch of grids
        frame_state[6] += self._vstep
        frames = self._frame(frame_state, row_codes=row_codes.reshape(-1), v=self._v_of_grid.take(block[0]))
        return grids, row_codes, block, frames

    def _reset_envs(self, ids: np.ndarray, tasks: np.ndarray, *, first: bool) -> np.ndarray:
        """Put new maps of ``tasks`` into environments ``ids`` and start their episodes.

        Autoresets (``first=False``) take maps prepared in batches (see ``_take_prepared``); ``reset()``
        builds them on the spot.

        Returns:
            ``(len(ids), d1)`` the new episodes' first observation frames.
        """
        slots = None if first else self._take_prepared(tasks)
        if slots is None:
            grids, row_codes, block, frames = self._generate_maps(tasks)
        else:
            grids, row_codes = self._pool_grid[slots], self._pool_row_code[slots]
            block, frames = self._pool_state[:, slots], self._pool_frame[slots]
        R = len(ids)
        self._grid[ids] = grids
        self._row_code[ids] = row_codes
        if self._ready_at is not None:
            self._ready_at.reshape(self.num_envs, self._G)[ids] = 0
        block[0] += self._base_g[ids]
        block[4] = np.arange(self._maps_built, self._maps_built + R)
        self._maps_built += R
        block[5] = self._vstep
        if (first and self.config.desync_episodes) or self.impl.desync_truncates:
            # desync_episodes: the first episode's length is random, so the environments' resets spread out
            # over time instead of all landing on the same step. (The regressed desync_truncates path does
            # this to every episode, so episodes end early for good.)
            block[6] = self._rng.integers(1, self.config.max_steps + 1, size=R)
            frames[:, self._d_win + len(_INVENTORY_FEATURES)] = block[6] * self._time_scale
        block[6] += self._vstep
        self._state[:, ids] = block
        self._next_deadline = int(self._deadline.min())
        return frames

    def _take_prepared(self, tasks: np.ndarray) -> np.ndarray | None:
        """Pool slots of prepared maps for ``tasks``, refilling exhausted tasks; ``None`` if they cannot fit.

        Map generation costs about the same for one map as for many (it is a fixed number of array
        operations), so maps are prepared ``_pool_size`` per task at a time and taken as resets need them.
        The curriculum still picks every task at reset time; only the random layouts are drawn in advance.
        """
        B, R = self._pool_size, len(tasks)
        if len(self.tasks) == 1:  # the common case without a curriculum: one run of slots
            if R > B:
                return None
            if self._pool_next[0] + R > B:
                self._refill(np.zeros(1, dtype=np.intp))
            start = int(self._pool_next[0])
            self._pool_next[0] += R
            return np.arange(start, start + R)
        counts = np.bincount(tasks, minlength=len(self.tasks))
        if counts.max() > B:
            return None
        short = np.flatnonzero(self._pool_next + counts > B)
        if len(short):
            self._refill(short)
        # The k-th reset of a task in this batch takes that task's k-th next prepared map.
        order = np.argsort(tasks, kind="stable")
        ranked = tasks[order]
        rank = np.empty(R, dtype=np.intp)
        rank[order] = np.arange(R) - np.searchsorted(ranked, ranked)
        slots = tasks * B + self._pool_next[tasks] + rank
        self._pool_next += counts
        return slots

    def _refill(self, tasks: np.ndarray) -> None:
        """Prepare ``_pool_size`` fresh maps for each of ``tasks``."""
        B = self._pool_size
        grids, row_codes, block, frames = self._generate_maps(np.repeat(tasks, B))
        slots = (tasks[:, None] * B + np.arange(B)).reshape(-1)
        self._pool_grid[slots] = grids
        self._pool_row_code[slots] = row_codes
        self._pool_state[:, slots] = block
        self._pool_frame[slots] = frames
        self._pool_next[tasks] = 0

    def _row_codes(self, grids: np.ndarray) -> np.ndarray:
        """``(R, G)`` row-segment codes of ``(R, G)`` grids (valid wherever a window row can be centered)."""
        r = self._r
        G = grids.shape[1]
        g = grids.astype(self._row_code_dtype, copy=False)  # every code fits: 5**(2r+1) - 1 <= dtype max
        codes = np.zeros(grids.shape, dtype=self._row_code_dtype)
        inner = codes[:, r : G - r]
        for j in range(2 * r + 1):  # cell x - r + j of the segment centered on x is digit j
            inner += g[:, j : G - 2 * r + j] * self._row_code_dtype(self._row_powers[j])
        return codes

    def _frame(
        self,
        state: np.ndarray | None = None,
        *,
        row_codes: np.ndarray | None = None,
        v: np.ndarray | None = None,
    ) -> np.ndarray:
        """One observation frame per column of ``state``, ``(n, d1)`` float32.

        Args:
            state: State columns (default: every environment's).
            row_codes: The flattened row codes ``state``'s rows index (default: the environments').
            v: The agents' compass coordinates (default: looked up from the rows).
        """
        st = self._state if state is None else state
        row, inv, deadline, target_v = st[0], st[1], st[6], st[_TARGET_V]
        n, d_win = len(row), self._d_win
        out = (
            np.empty((n, self._d1))
            if self.impl.obs_default_dtype
            else np.empty((n, self._d1), dtype=np.float32)
        )
        codes = self._row_code_flat if row_codes is None else row_codes
        segments = codes.take(self._row_offsets + row)  # (2r+1, n) row codes of each window
        # (A take straight into the strided window columns is slower than a contiguous take and a copy.)
        out[:, :d_win] = self._row_table.take(segments.T).view(np.float32).reshape(n, d_win)
        # The rest is assembled feature-major (contiguous rows of n values) and transposed in one copy.
        tail = np.empty((self._d_tail, n), dtype=np.float32)
        n_inv = len(_INVENTORY_FEATURES)
        np.take(self._inv_features, inv, axis=1, out=tail[:n_inv], mode="clip")
        np.multiply(deadline - self._vstep, self._time_scale, out=tail[n_inv])
        if self._d_tail > n_inv + 1:
            dv = target_v - (self._v_of_row.take(row) if v is None else v)  # (3, n)
            np.take(self._compass_table, dv, axis=1, out=tail[n_inv + 1 :].reshape(2, 3, n), mode="clip")
        out[:, d_win:] = tail.T
        return out

    def _stack(self, frame: np.ndarray) -> np.ndarray:
        """Push ``frame`` into the ring of the last ``frame_stack`` frames; return them oldest first."""
        frames = self._frames
        assert frames is not None
        k = len(frames)
        self._head = (self._head + 1) % k
        frames[self._head] = frame
        return np.concatenate([frames[(self._head + 1 + i) % k] for i in range(k)], axis=1)

    def _unusable_as_walls(self, code: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """Objects resting after use (cooldowns) and altars past the heart cap act like walls this step."""
        blocked = np.zeros(self.num_envs, dtype=bool)
        if self._ready_at is not None:
            # An object used at step s rests while the step count is <= s + cooldown.
            blocked |= self._ready_at.take(cell) >= self._vstep
        if self._heart_limited:
            hearts = self._ep_counts >> (2 * _COUNT_BITS)
            blocked |= (code == ALTAR) & (hearts >= self.config.heart_cap)
        return np.where(blocked, np.uint8(WALL), code)

    def _start_cooldowns(self, idx: np.ndarray, cell: np.ndarray) -> None:
        ready_at = self._ready_at
        assert ready_at is not None
        event = self._event.take(idx)
        for kind, cooldown in ((1, self.config.mine_cooldown), (2, self.config.generator_cooldown)):
            if cooldown:
                used = event == kind
                ready_at[cell[used]] = self._vstep + cooldown

    def _rebuild_everything(self, resetting: np.ndarray) -> None:
        # Regressed path (case 001, "environment recreated on every reset"): whenever any environment resets,
        # the whole vectorized environment is recreated: static lookup tables reallocated and recomputed, the
        # state copied into fresh buffers, every map's derived data recomputed from its grid although only the
        # resetting maps change, and the prepared maps thrown away (the autoreset then prepares new ones).
        # The recreated statistic accumulators of the resetting environments start at zero *before* their
        # finished episode is read, so its return and resource counts are lost.
        old = {name: getattr(self, name) for name in ("_grid", "_state", "_ready_at", "_frames")}
        next_deadline, head, maps_built = self._next_deadline, self._head, self._maps_built
        self._build_static()
        self._allocate_state()
        for name, value in old.items():
            if value is None:
                continue
            getattr(self, name)[...] = value
        self._next_deadline, self._head, self._maps_built = next_deadline, head, maps_built
        self._row_code[...] = self._row_codes(self._grid)
        if self.config.compass:
            self._target_v[...] = self._v_of_cell[self._target_cells]

    # --- diagnostics ---------------------------------------------------------------------------------------

    def set_map(self, env: int, rows: Sequence[str], *, ore: int = 0, battery: int = 0) -> np.ndarray:
        """Replace one environment's map with a hand-drawn one and restart its episode there.

        A hook for tests and probes (put the agent next to a mine and watch the rewards). The episode restarts
        with ``max_steps`` to go, zeroed statistics and the given inventory; the task (and so the altar cost)
        stays the environment's current one. The compass points at the first mine, generator and altar in
        row-major order (at the agent's starting cell for a kind the map lacks).

        Args:
            env: Environment index.
            rows: ``s`` strings of ``s`` characters (``s`` <= the largest map size): ``.`` empty, ``#`` wall,
                ``m`` mine, ``g`` generator, ``a`` altar, ``@`` the agent (exactly one). Centered like a task's
                map; cells outside it are walls.
            ore: Ore in hand at the start.
            battery: Batteries in hand at the start.

        Returns:
            ``(obs_dim,)`` the environment's new observation (``step`` returns the following ones).
        """
        if self._needs_reset:
            raise RuntimeError("set_map() needs a reset() environment; call reset() first")
        s = len(rows)
        if not 1 <= s <= self._S or any(len(r) != s for r in rows):
            raise ValueError(f"rows must be a square of side <= {self._S}, got {[len(r) for r in rows]}")
        glyphs = {".": EMPTY, "#": WALL, "m": MINE, "g": GENERATOR, "a": ALTAR, "@": EMPTY}
        unknown = sorted({c for r in rows for c in r} - set(glyphs))
        if unknown:
            raise ValueError(f"unknown map characters {unknown}; use one of {sorted(glyphs)}")
        if sum(r.count("@") for r in rows) != 1:
            raise ValueError("the map must hold exactly one agent '@'")
        oc, bc = self.config.ore_cap, self.config.battery_cap
        if not (0 <= ore <= oc and 0 <= battery <= bc):
            raise ValueError(f"inventory must be within the caps: 0 <= ore <= {oc}, 0 <= battery <= {bc}")
        o = (self._S - s) // 2
        local = np.full((self._S, self._S), WALL, dtype=np.uint8)
        agent = -1
        for y, line in enumerate(rows):
            for x, c in enumerate(line):
                local[o + y, o + x] = glyphs[c]
                if c == "@":
                    agent = (o + y) * self._S + (o + x)
        cells = local.reshape(-1)
        base = env * self._G
        self._grid[env] = WALL
        self._grid[env, self._cell_to_grid] = cells
        self._row_code[env] = self._row_codes(self._grid[env : env + 1])[0]
        self._row[env] = base + self._cell_to_grid[agent]
        cost = int(self.tasks.params[self._task[env], TASK_FIELDS.index("altar_cost")])
        self._inv[env] = ore + (oc + 1) * (battery + (bc + 1) * (cost - 1))
        for k, kind in enumerate((MINE, GENERATOR, ALTAR)):
            where = np.flatnonzero(cells == kind)
            self._target_cells[k, env] = where[0] if len(where) else agent
        self._target_v[:, env] = self._v_of_cell[self._target_cells[:, env]]
        self._ep_counts[env] = 0
        self.map_ids[env] = self._maps_built
        self._maps_built += 1
        if self._ready_at is not None:
            self._ready_at[base : base + self._G] = 0
        self._start[env] = self._vstep
        self._deadline[env] = self._vstep + self.config.max_steps
        self._next_deadline = int(self._deadline.min())
        frame = self._frame(self._state[:, env : env + 1])[0]
        if self._frames is not None:
            self._frames[:, env] = frame
            return np.tile(frame, self.config.frame_stack)
        return frame

    # --- inspection ----------------------------------------------------------------------------------------

    def task_of_env(self) -> np.ndarray:
        """``(num_envs,)`` the task each environment is playing."""
        return self._task.copy()

    def inventory(self) -> dict[str, np.ndarray]:
        """``(num_envs,)`` arrays ``ore``, ``battery`` (held now) and ``altar_cost`` (of the task)."""
        oc, bc = self.config.ore_cap, self.config.battery_cap
        inv = self._inv
        return {
            "ore": inv % (oc + 1),
            "battery": (inv // (oc + 1)) % (bc + 1),
            "altar_cost": inv // ((oc + 1) * (bc + 1)) + 1,
        }

    def agent_cells(self) -> np.ndarray:
        """``(num_envs, 2)`` the agent's (row, column) in the interior (0-based, in the largest map's frame)."""
        g = self._row - self._base_g
        return np.stack([g // self._W - self._pad, g % self._W - self._pad], axis=1)

    def grids(self) -> np.ndarray:
        """``(num_envs, S, S)`` uint8 cell codes of the interiors (0 empty, 1 wall, 2 mine, 3 generator, 4 altar)."""
        p, W = self._pad, self._W
        return self._grid.reshape(self.num_envs, W, W)[:, p : W - p, p : W - p].copy()

    def render_text(self, env: int = 0) -> str:
        """One environment's map as text: ``#`` wall, ``m`` mine, ``g`` generator, ``a`` altar, ``@`` agent."""
        glyphs = np.array([".", "#", "m", "g", "a"])
        grid = glyphs[self._grid[env]]
        grid[self._row[env] - self._base_g[env]] = "@"
        grid = grid.reshape(self._W, self._W)
        p = self._pad - 1
        return "\n".join("".join(row[p : self._W - p]) for row in grid[p : self._W - p])


def make_arena(
    config: dict[str, Any],
    num_envs: int,
    seed: int | None,
    impl: ArenaImpl | None = None,
) -> ArenaVecEnv:
    """An arena with the curriculum its config describes.

    Args:
        config: A config dict with an ``env`` section and optionally a ``curriculum`` section (other sections
            such as ``trainer`` are ignored). Without a ``curriculum`` section, or with ``kind: none``, every
            episode plays the ``env`` section's own map.
        num_envs: Number of environments.
        seed: Seeds the environment; the curriculum gets an independent stream derived from it.
        impl: Code paths for the environment and the curriculum.
    """
    if not isinstance(config, dict):
        raise TypeError(
            f"make_arena expects a config dict with an 'env' section, got {type(config).__name__}"
        )
    if (
        "env" not in config
        and "curriculum" not in config
        and set(config) & {f.name for f in dataclasses.fields(ArenaConfig)}
    ):
        raise ValueError(
            "make_arena expects a config with sections ({'env': {...}, 'curriculum': {...}}) but got what looks "
            "like a bare env section; wrap it as {'env': section} or call ArenaVecEnv(num_envs, section)"
        )
    env_section = config.get("env", {})
    env_cfg = (
        env_section if isinstance(env_section, ArenaConfig) else ArenaConfig.from_dict(dict(env_section))
    )
    curriculum = None
    section = config.get("curriculum")
    if section is not None:
        cur_cfg = (
            section if isinstance(section, CurriculumConfig) else CurriculumConfig.from_dict(dict(section))
        )
        cur_seed = None if seed is None else np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
        curriculum = make_curriculum(cur_cfg, seed=cur_seed, impl=impl)
    return ArenaVecEnv(num_envs, env_cfg, seed=seed, curriculum=curriculum, impl=impl)


def __getattr__(name: str) -> Any:
    # The reference policies live in expert.py (they import this module); re-export them lazily.
    if name in ("expert_actions", "random_actions", "evaluate_policy"):
        from rlaudit.demo import expert

        return getattr(expert, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
