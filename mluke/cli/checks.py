"""Checks of command-line options, run before a command does any work.

A command that trains the demo model on first use, or embeds every span of a
file, would otherwise refuse a misspelt option only minutes later. Every check
here is cheap (no model is loaded, nothing is trained or built) and its error
names the option as the user typed it (``--lang xx``), with the accepted values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from kb.errors import InputFormatError, OptionError
from kb.files import check_output, check_writable
from mluke.options import METHODS

# The accepted values of options, kept here so that checking them imports no model code (transformers takes
# seconds to import); tests/mluke/test_cli_checks.py checks each against the library's own constant.
PRESETS = ("demo", "tiny")  #: mluke.demo.data.PRESETS
DEMO_HIDDEN_SIZE = 128  #: mluke.demo.data.PRESETS["demo"].hidden_size
LINK_METHODS = METHODS  # mluke.options imports no model code
SPAN_FEATURES = ("word", "entity", "entity-token")  #: mluke.spans.FEATURES
INDEX_KINDS = ("flat", "hnsw", "ivfpq")  #: probes.retrieval.KINDS
MLQA_LANGUAGES = ("en", "es", "de", "ar", "hi", "vi", "zh")  #: probes.transfer.runs.qa.MLQA_LANGUAGES


def choice(flag: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``; otherwise an error listing them."""
    if value not in choices:
        raise OptionError(f"{flag} {value}: expected one of {', '.join(choices)}")
    return value


def choices(flag: str, values: Iterable[str], allowed: Sequence[str]) -> list[str]:
    """Every item of a comma-separated option checked with :func:`choice`."""
    return [choice(flag, v, allowed) for v in values]


def positive(flag: str, value: float | None) -> None:
    """An error unless ``value`` (when given) is a finite number above zero (not nan, not inf)."""
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise OptionError(f"{flag} {value}: expected a finite number above 0")


def at_least(flag: str, value: int | None, low: int) -> None:
    """An error unless ``value`` (when given) is at least ``low``."""
    if value is not None and value < low:
        raise OptionError(f"{flag} {value}: expected at least {low}")


def between(flag: str, value: float | None, low: float, high: float) -> None:
    """An error unless ``value`` (when given) lies in ``[low, high]``."""
    if value is not None and not low <= value <= high:
        raise OptionError(f"{flag} {value}: expected a number from {low:g} to {high:g}")


def device(value: str | None, dtype: str | None = None) -> None:
    """``--device`` and ``--dtype``: a known device that exists here, a known precision (torch is imported only
    when one of them is given: the default needs no check)."""
    if value is None and dtype is None:
        return
    from mluke.models.devices import DTYPES, INT8_ON_GPU, int8_device, resolve_device, wants_int8

    if wants_int8(dtype):
        where = int8_device(value)
        if where is not None and where.type != "cpu":
            raise OptionError(f"--device {value} --dtype {dtype}: {INT8_ON_GPU}")
    if value is not None:
        try:
            resolve_device(value)
        except OptionError as exc:
            raise OptionError(f"--{exc!s}") from None
    if dtype is not None and dtype.lower() not in DTYPES:
        raise OptionError(f"--dtype {dtype}: expected one of fp32, bf16, fp16, int8 (or {', '.join(sorted(DTYPES))})")


def training_dtype(command: str, dtype: str | None) -> None:
    """Refuse ``--dtype`` on a training command: training runs in float32 (bf16 autocast on GPUs where the run
    asks for it); ``--dtype`` sets the precision in which the inference commands run a model."""
    if dtype is not None:
        raise OptionError(
            f"--dtype {dtype}: {command} trains in float32 (with bf16 autocast on a GPU for pretraining: run.bf16 "
            "in --config); --dtype (fp32, bf16, fp16, int8) is for running a trained model: mluke link, probe, "
            "eval-mlama, evaluate and the analysis commands"
        )


def db_languages(db: str | Path | None) -> tuple[str, ...]:
    """The languages of ``--db`` (default: the embedded kb's, known without building it)."""
    from kb.languages import MLUKE_LANGUAGES

    if db is None or (str(db) == "embedded" and not Path(db).exists()):
        return MLUKE_LANGUAGES
    from kb import open_db

    with open_db(db) as d:
        return tuple(d.languages)


def languages(flag: str, values: Iterable[str], allowed: Sequence[str], where: str) -> list[str]:
    """Language codes each among ``allowed`` (the languages of ``where``, named in the error)."""
    out = list(values)
    for lang in out:
        if lang not in allowed:
            raise OptionError(f"{flag} {lang}: not a language of {where} (it has {', '.join(sorted(allowed))})")
    return out


def preset(value: str | None) -> None:
    """``--preset``: one of the demo presets."""
    if value is not None:
        choice("--preset", value, PRESETS)


def hidden_size(model: str | None) -> int | None:
    """The model's vector size, read from its config.json without loading it (the demo model's when
    ``model`` is None or ``"demo"``); None when it cannot be known yet (a hub name)."""
    if model is None or model == "demo":  #: mluke.opening.DEMO
        return DEMO_HIDDEN_SIZE
    config = Path(model) / "config.json"
    if not config.is_file():
        return None
    try:
        return int(json.loads(config.read_text(encoding="utf-8"))["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def input_path(name: str, path: str | Path | None, kind: str = "file or folder", expected: str = "") -> None:
    """An error naming the argument or option unless ``path`` (when given; ``-`` is standard input) exists:
    a missing input is refused before anything slow is imported or loaded (``kind``, ``expected``: what
    the message says it should have been)."""
    if path is None or str(path) == "-":
        return
    if not Path(path).exists():
        raise InputFormatError(f"{name} {path}: no such {kind}" + (f" (expected {expected})" if expected else ""))


def input_file(name: str, path: str | Path | None) -> None:
    """:func:`input_path`, and ``path`` must be a file, not a folder."""
    input_path(name, path, "file")
    if path is not None and str(path) != "-" and Path(path).is_dir():
        raise InputFormatError(f"{name} {path}: is a folder; expected a file")


def config_file(path: Path | None) -> None:
    """``--config``: an existing file (its content is read by the trainer)."""
    input_file("--config", path)


def demo_output(output: Path, overwrite: bool) -> None:
    """``--output`` of ``--preset``: a finished demo model there is used as it is; otherwise the folder must
    be one the training can write (checked before the trainer is imported)."""
    if (output / "demo.json").is_file() and not overwrite:
        return
    check_writable(output)


def output_path(path: str | Path | None, overwrite: bool, what: str = "") -> None:
    """An output file or folder (when given; ``-`` is standard output): refused if it exists (unless
    ``overwrite``) or cannot be written (:func:`kb.files.check_output`)."""
    if path is not None and str(path) != "-":
        check_output(path, overwrite=overwrite, what=what)


def kb_overrides(kb: list[str] | None) -> dict[str, str | None]:
    """``--kb NAME=DB`` (repeatable) by name; the KnowBert code, slow to import, only when some are given."""
    if not kb:
        return {}
    from mluke.knowbert.kb_sources import parse_kb_overrides

    return parse_kb_overrides(kb)
