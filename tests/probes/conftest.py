"""A hand-written folder in the mLAMA 1.1 layout (never the real, CC BY-NC data) and the tiny demo model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli

JAPAN, TOKYO, FRANCE, PARIS, GERMANY, BERLIN, SPAIN = (
    "geonames:1861060",
    "geonames:1850147",
    "geonames:3017382",
    "geonames:2988507",
    "geonames:2921044",
    "geonames:2950159",
    "geonames:2510769",
)


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def write_mlama(root: Path) -> Path:
    fact = lambda s, sl, o, ol, i: {"sub_uri": s, "sub_label": sl, "obj_uri": o, "obj_label": ol, "lineid": i}  # noqa: E731
    _jsonl(
        root / "mlama1.1" / "en" / "templates.jsonl",
        [
            {"relation": "P36", "template": "The capital of [X] is [Y] ."},
            {"relation": "P47", "template": "[X] shares border with [Y] ."},
            {"relation": "P569", "template": "[X] was born in [Y] ."},
            {"relation": "date_of_birth", "template": "[X] (born [Y])."},
        ],
    )
    _jsonl(
        root / "mlama1.1" / "en" / "P36.jsonl",
        [
            fact(JAPAN, "Japan", TOKYO, "Tokyo", 1),
            fact(FRANCE, "France", PARIS, "Paris", 2),
            fact(GERMANY, "Germany", BERLIN, "Berlin", 3),
        ],
    )
    _jsonl(
        root / "mlama1.1" / "en" / "P47.jsonl",
        [
            fact(FRANCE, "France", GERMANY, "Germany", 1),
            fact(FRANCE, "France", SPAIN, "Spain", 2),  # N-M: both kept
            fact(GERMANY, "Germany", FRANCE, "France", 3),
        ],
    )
    _jsonl(root / "mlama1.1" / "en" / "P569.jsonl", [fact(JAPAN, "Japan", "Q1", "1900", 1)])
    _jsonl(root / "mlama1.1" / "ja" / "templates.jsonl", [{"relation": "P36", "template": "[Y]は[X]の首都です。"}])
    _jsonl(
        root / "mlama1.1" / "ja" / "P36.jsonl",
        [fact(JAPAN, "日本", TOKYO, "東京", 1), fact(FRANCE, "フランス", PARIS, "パリ", 2)],
    )
    (root / "TREx_multilingual_objects").mkdir(parents=True)
    (root / "TREx_multilingual_objects" / "en.json").write_text(
        json.dumps(
            {
                "P36": {"objects": ["Tokyo", "Paris", "Berlin", "Atlantis"]},
                "P47": {"objects": ["Germany", "Spain", "France"]},
            }
        )
    )
    (root / "TREx_multilingual_objects" / "ja.json").write_text(
        json.dumps({"P36": {"objects": ["東京", "パリ", "ベルリン"]}}, ensure_ascii=False)
    )
    return root


@pytest.fixture
def mlama_dir(tmp_path: Path) -> Path:
    return write_mlama(tmp_path / "mlama")


@pytest.fixture
def eval_mlama_cli(cli: Cli, mlama_dir: Path) -> Cli:
    """``mluke eval-mlama <mlama_dir> --no-progress`` with the options a test adds (``model=...``, ``langs=...``)."""
    return cli.bind("eval-mlama", mlama_dir, no_progress=True)


@pytest.fixture
def finetune_cli(cli: Cli, tiny_demo: Path) -> Cli:
    """``mluke finetune`` for one epoch of the tiny demo model with word features (a test adds the task, data and
    output: ``finetune_cli("ner", "-o", out, train=..., dev=...)``)."""
    return cli.bind("finetune", model=tiny_demo, features="word", epochs="1", learning_rate="1e-3", no_progress=True)
