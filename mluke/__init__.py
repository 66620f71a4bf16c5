"""mluke: multilingual knowledge probing and entity linking with mLUKE.

Public API (torch and transformers are imported only when first used):

- :func:`probe` -> :class:`ProbeResult` — cloze probing with entity or word masks;
- :func:`link` -> :class:`LinkedMention` lists, :func:`link_file` -> :class:`LinkedTexts`, :func:`link_corpus`
  (a corpus file into a JSONL file, in order, resumable, with worker processes),
  :class:`Linker` — entity linking with kb candidates and the model; :class:`KnowBertLinker` — the same
  with a KnowBert model's integrated linker (``method="knowbert"``);
- :class:`ProbeOptions` / :class:`LinkOptions` — the options of probing and linking, as objects;
- :func:`load` / :func:`save` — mLUKE checkpoints in the studio-ousia layout; :func:`open_model` — the
  given model or the default demo model (what every ``model=`` argument goes through);
- :class:`MlukeTokenizer` — fairseq word ids with offsets, entity inputs; :class:`LukeTokenizer` — the same
  for English LUKE (byte-level BPE, English titles);
- :class:`MlukeForMaskedLM` — the model, with candidate-restricted scoring;
- :func:`span_vectors` — contextual vectors of character spans (word or entity features, any layer);
- :func:`clear_cache` — forget the linkers and models :func:`link` and :func:`probe` keep for their next call;
- :func:`pretrain` — pretraining from XLM-R (see :mod:`mluke.pretraining`);
- :class:`MlukeError` — base of every error mluke raises on purpose; all of them in :mod:`mluke.errors`.

Sub-packages, by job: :mod:`mluke.models` (checkpoints, tokenizers, the model classes), :mod:`mluke.probing`,
:mod:`mluke.linking`, :mod:`mluke.demo` (the embedded demo model), :mod:`mluke.pretraining`,
:mod:`mluke.finetuning`, :mod:`mluke.knowbert`. The knowledge side lives in the sibling package :mod:`kb`;
evaluations and analyses in :mod:`probes`; the ``mluke`` command line in :mod:`mluke.cli`, the outermost layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kb.errors import MlukeError

if TYPE_CHECKING:  # what the lazy table below exports, visible to IDEs, type checkers and mkdocstrings
    from mluke.linking.corpus import link_corpus as link_corpus
    from mluke.linking.files import link_file as link_file
    from mluke.linking.knowbert import KnowBertLinker as KnowBertLinker
    from mluke.linking.linker import Linker as Linker
    from mluke.linking.texts import link as link
    from mluke.models.checkpoint import Mluke as Mluke, load as load, save as save
    from mluke.models.luke import LukeTokenizer as LukeTokenizer
    from mluke.models.masked_lm import MlukeForMaskedLM as MlukeForMaskedLM
    from mluke.models.tokenizer import MlukeTokenizer as MlukeTokenizer
    from mluke.opening import open_model as open_model
    from mluke.options import LinkOptions as LinkOptions, ProbeOptions as ProbeOptions
    from mluke.pretraining import pretrain as pretrain
    from mluke.probing.cloze import probe as probe
    from mluke.results import LinkedMention as LinkedMention, LinkedTexts as LinkedTexts, ProbeResult as ProbeResult
    from mluke.reuse import clear_cache as clear_cache
    from mluke.spans import span_vectors as span_vectors

__version__ = "0.1.0"

_LAZY = {
    "load": "mluke.models.checkpoint",
    "save": "mluke.models.checkpoint",
    "open_model": "mluke.opening",
    "Mluke": "mluke.models.checkpoint",
    "MlukeTokenizer": "mluke.models.tokenizer",
    "LukeTokenizer": "mluke.models.luke",
    "MlukeForMaskedLM": "mluke.models.masked_lm",
    "probe": "mluke.probing.cloze",
    "ProbeOptions": "mluke.options",
    "ProbeResult": "mluke.results",
    "link": "mluke.linking.texts",
    "link_file": "mluke.linking.files",
    "link_corpus": "mluke.linking.corpus",
    "Linker": "mluke.linking.linker",
    "KnowBertLinker": "mluke.linking.knowbert",
    "LinkOptions": "mluke.options",
    "LinkedMention": "mluke.results",
    "LinkedTexts": "mluke.results",
    "pretrain": "mluke.pretraining",
    "span_vectors": "mluke.spans",
    "clear_cache": "mluke.reuse",
}

__all__ = ["MlukeError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mluke' has no attribute {name!r}")
