"""rlaudit.adapters.configs: configs users already have, as plain resolved dicts."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
from pathlib import Path

import pytest

from rlaudit.adapters.configs import apply_overrides, load_config, parse_value, to_plain


@pytest.fixture
def hydra_tree(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    (conf / "optimizer").mkdir(parents=True)
    (conf / "config.yaml").write_text(
        "defaults:\n  - optimizer: adam\n  - _self_\n"
        "trainer:\n  lr: ${optimizer.lr}\n  steps: 100\n  job: ${hydra:job.name}\n"
        "hydra:\n  run:\n    dir: outputs/${now:%Y-%m-%d}\n"
    )
    (conf / "optimizer" / "adam.yaml").write_text("name: adam\nlr: 3e-4\n")
    (conf / "optimizer" / "sgd.yaml").write_text("name: sgd\nlr: 0.1\n")
    return conf


def test_hydra_tree_composed_resolved_and_runtime_node_removed(hydra_tree: Path) -> None:
    cfg = load_config(hydra_tree)
    assert cfg["optimizer"] == {"name": "adam", "lr": 3e-4}
    assert cfg["trainer"]["lr"] == 3e-4  # interpolation resolved
    assert (
        isinstance(cfg["trainer"]["job"], str) and "${" not in cfg["trainer"]["job"]
    )  # ${hydra:...} resolved
    assert "hydra" not in cfg and "defaults" not in cfg
    json.dumps(cfg)


def test_hydra_overrides_values_and_config_groups(hydra_tree: Path) -> None:
    cfg = load_config(hydra_tree, overrides=["optimizer=sgd", "trainer.steps=5", "+trainer.extra=[1, 2]"])
    assert cfg["optimizer"]["name"] == "sgd" and cfg["trainer"]["lr"] == 0.1
    assert cfg["trainer"]["steps"] == 5 and cfg["trainer"]["extra"] == [1, 2]
    with pytest.raises(ValueError, match="Hydra could not compose"):
        load_config(hydra_tree, overrides=["trainer.nope=1"])


def test_primary_yaml_with_defaults_is_composed(hydra_tree: Path) -> None:
    cfg = load_config(hydra_tree / "config.yaml", overrides=["optimizer.lr=1e-2"])
    assert cfg["trainer"]["lr"] == 0.01


def test_hydra_directory_without_primary_config(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\n")
    (tmp_path / "b.yaml").write_text("y: 2\n")
    with pytest.raises(FileNotFoundError, match=r"a.yaml, b.yaml.*config_name"):
        load_config(tmp_path)
    assert load_config(tmp_path, config_name="b") == {"y": 2}


def test_hydra_run_output_directory(tmp_path: Path) -> None:
    run = tmp_path / "outputs" / "run1"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("lr: 0.5\nmodel:\n  width: ${lr}\n")
    (run / ".hydra" / "hydra.yaml").write_text("hydra:\n  job:\n    name: train\n")
    assert load_config(run) == {"lr": 0.5, "model": {"width": 0.5}}


def test_plain_yaml_json_toml(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("a: 1\nb: ${a}\nhydra:\n  job: {name: x}\n")
    (tmp_path / "c.json").write_text(json.dumps({"a": 1, "b": {"c": [1, 2]}}))
    (tmp_path / "c.toml").write_text("a = 1\n[b]\nc = 'x'\n")
    assert load_config(tmp_path / "c.yaml", overrides=["a=2"]) == {"a": 2, "b": 2}
    assert load_config(tmp_path / "c.json", overrides=["b.c.1=5"]) == {"a": 1, "b": {"c": [1, 5]}}
    assert load_config(tmp_path / "c.toml") == {"a": 1, "b": {"c": "x"}}


def test_unresolvable_interpolation_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("a: ${missing.key}\n")
    with pytest.raises(ValueError, match="missing"):
        load_config(tmp_path / "c.yaml")


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_config(tmp_path / "absent.yaml")
    (tmp_path / "c.ini").write_text("[x]\n")
    with pytest.raises(ValueError, match=r"unsupported type \.ini"):
        load_config(tmp_path / "c.ini")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="mapping"):
        load_config(tmp_path / "list.json")


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Inner:
    width: int = 64
    act: type = dict


@dataclasses.dataclass
class TrainConfig:
    lr: float = 3e-4
    sizes: tuple[int, ...] = (64, 64)
    inner: Inner = dataclasses.field(default_factory=Inner)
    color: Color = Color.RED
    out: Path = Path("runs")
    schedule: float | None = None


def test_to_plain_dataclass_enum_path_tuple_class() -> None:
    plain = to_plain(TrainConfig())
    assert plain == {
        "lr": 3e-4,
        "sizes": [64, 64],
        "inner": {"width": 64, "act": "builtins.dict"},
        "color": "red",
        "out": "runs",
        "schedule": None,
    }


def test_to_plain_pydantic_omegaconf_namespace_numpy() -> None:
    import numpy as np
    import pydantic
    from omegaconf import OmegaConf

    class Model(pydantic.BaseModel):
        lr: float = 1e-3
        layers: list[int] = [32]

    assert to_plain(Model()) == {"lr": 1e-3, "layers": [32]}
    cfg = OmegaConf.create({"a": 2, "b": "${a}", "hydra": {"x": 1}, "c": {"d": float("nan")}})
    assert to_plain(cfg) == {"a": 2, "b": 2, "c": {"d": "nan"}}
    assert to_plain(argparse.Namespace(seed=np.int64(3), arr=np.arange(2))) == {"seed": 3, "arr": [0, 1]}
    with pytest.raises(ValueError, match="expected a config object"):
        to_plain([1, 2])


def test_apply_overrides_forms_and_errors() -> None:
    base = {"trainer": {"lr": 1.0, "sizes": [1, 2]}, "x": 1}
    out = apply_overrides(
        base, ["trainer.lr=1e-3", "++trainer.new=true", "+y.z=null", "~x", "trainer.sizes.0=7"]
    )
    assert out == {"trainer": {"lr": 1e-3, "sizes": [7, 2], "new": True}, "y": {"z": None}}
    assert base["x"] == 1 and base["trainer"]["lr"] == 1.0  # the input is not modified
    with pytest.raises(ValueError, match=r"keys at that level: lr, sizes.*\+trainer.lrr"):
        apply_overrides(base, ["trainer.lrr=2"])
    with pytest.raises(ValueError, match="already exists"):
        apply_overrides(base, ["+x=2"])
    with pytest.raises(ValueError, match="malformed override"):
        apply_overrides(base, ["=3"])
    with pytest.raises(ValueError, match="has no value"):
        apply_overrides(base, ["x"])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e-3", 1e-3),
        ("3", 3),
        ("true", True),
        ("null", None),
        ("[64, 64]", [64, 64]),
        ("tanh", "tanh"),
        ("'1'", "1"),
    ],
)
def test_parse_value_yaml_syntax(text: str, value: object) -> None:
    assert parse_value(text) == value
