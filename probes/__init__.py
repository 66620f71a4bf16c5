"""probes: mLAMA evaluation, language bias, the demo model's evaluation, and entity-linking evaluation.

The outer layer of the library: uses both :mod:`kb` and :mod:`mluke`; nothing in
those imports ``probes`` back. Each ``eval_*`` function is what the ``mluke``
command of the same name does.

- :func:`read_mlama` (:mod:`probes.mlama`) / :func:`eval_mlama` (:mod:`probes.mlama_eval`) — mLAMA 1.1
  folders, P@1 macro-averaged over relations (:class:`MlamaReport`); :func:`compare_mlama` — several models
  side by side (:class:`MlamaComparison`);
- :func:`language_bias` — top false-positive prediction and its share (paper, Table 6);
  :func:`bias_by_language` — the objects each language over-predicts;
- :func:`build_index` / :class:`SpanIndex` (:mod:`probes.retrieval`) — FAISS indexes over span vectors;
  :func:`evaluate_cwr` (:mod:`probes.cwr`) — contextual word retrieval MRR (paper, Table 2), with the
  :func:`read_parallel_jsonl` and :func:`read_mlqa_spans` readers; :func:`modularity` /
  :func:`modularity_by_language` (:mod:`probes.modularity`) — k-NN graph modularity (paper, Table 4);
  :func:`parallel_spans` (:mod:`probes.parallel`) — parallel sentences from the kb;
- :func:`eval_demo` — the demo model on held-out vs training (fact, language) pairs and its
  ambiguous-city linking set (:class:`DemoReport`);
- :func:`eval_link` / :func:`evaluate_linking` / :func:`read_mewsli` (:mod:`probes.mewsli`) — Mewsli-9
  folders (:class:`LinkingSet` of :class:`LinkDoc` with :class:`GoldMention`), in-KB / ambiguous accuracy and
  end-to-end P/R/F1 per language and method (:class:`LinkingReport`);
- :func:`calibrate` (:mod:`probes.linking_calibration`) — fit the linker's confidence (NIL) calibration on
  the demo model and score NIL precision / recall; its data (:mod:`probes.linking_calibration_data`):
  :func:`free_wording_docs`, the demo's ambiguous-city sentences in held-out free wording (does context beat
  the prior?), and :func:`ordinary_text_docs`, cities beside an unrelated country or none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy table below exports, visible to IDEs, type checkers and mkdocstrings
    from probes.bias import bias_by_language as bias_by_language, language_bias as language_bias
    from probes.cwr import (
        CwrReport as CwrReport,
        ParallelSpan as ParallelSpan,
        evaluate_cwr as evaluate_cwr,
        read_mlqa_spans as read_mlqa_spans,
        read_parallel_jsonl as read_parallel_jsonl,
    )
    from probes.demo_eval import DemoReport as DemoReport, eval_demo as eval_demo
    from probes.linking_calibration import calibrate as calibrate
    from probes.linking_calibration_data import (
        free_wording_docs as free_wording_docs,
        ordinary_text_docs as ordinary_text_docs,
    )
    from probes.linking_eval import (
        LinkingReport as LinkingReport,
        eval_link as eval_link,
        evaluate_linking as evaluate_linking,
    )
    from probes.mewsli import (
        GoldMention as GoldMention,
        LinkDoc as LinkDoc,
        LinkingSet as LinkingSet,
        read_mewsli as read_mewsli,
    )
    from probes.mlama import read_mlama as read_mlama
    from probes.mlama_eval import (
        MlamaComparison as MlamaComparison,
        MlamaReport as MlamaReport,
        compare_mlama as compare_mlama,
        eval_mlama as eval_mlama,
    )
    from probes.modularity import modularity as modularity, modularity_by_language as modularity_by_language
    from probes.parallel import parallel_spans as parallel_spans
    from probes.retrieval import SpanIndex as SpanIndex, build_index as build_index

#: Where each public name lives: imported on first use, so that ``import probes`` (and the command line's
#: checks) do not pay for torch and transformers before they are needed.
_LAZY = {
    "bias_by_language": "probes.bias",
    "language_bias": "probes.bias",
    "CwrReport": "probes.cwr",
    "ParallelSpan": "probes.cwr",
    "evaluate_cwr": "probes.cwr",
    "read_mlqa_spans": "probes.cwr",
    "read_parallel_jsonl": "probes.cwr",
    "DemoReport": "probes.demo_eval",
    "eval_demo": "probes.demo_eval",
    "calibrate": "probes.linking_calibration",
    "free_wording_docs": "probes.linking_calibration_data",
    "ordinary_text_docs": "probes.linking_calibration_data",
    "LinkingReport": "probes.linking_eval",
    "eval_link": "probes.linking_eval",
    "evaluate_linking": "probes.linking_eval",
    "GoldMention": "probes.mewsli",
    "LinkDoc": "probes.mewsli",
    "LinkingSet": "probes.mewsli",
    "read_mewsli": "probes.mewsli",
    "read_mlama": "probes.mlama",
    "MlamaComparison": "probes.mlama_eval",
    "MlamaReport": "probes.mlama_eval",
    "compare_mlama": "probes.mlama_eval",
    "eval_mlama": "probes.mlama_eval",
    "modularity": "probes.modularity",
    "modularity_by_language": "probes.modularity",
    "parallel_spans": "probes.parallel",
    "SpanIndex": "probes.retrieval",
    "build_index": "probes.retrieval",
}

__all__ = [
    "CwrReport",
    "DemoReport",
    "GoldMention",
    "LinkDoc",
    "LinkingReport",
    "LinkingSet",
    "MlamaComparison",
    "MlamaReport",
    "ParallelSpan",
    "SpanIndex",
    "bias_by_language",
    "build_index",
    "calibrate",
    "compare_mlama",
    "eval_demo",
    "eval_link",
    "eval_mlama",
    "evaluate_cwr",
    "evaluate_linking",
    "free_wording_docs",
    "language_bias",
    "modularity",
    "modularity_by_language",
    "ordinary_text_docs",
    "parallel_spans",
    "read_mewsli",
    "read_mlama",
    "read_mlqa_spans",
    "read_parallel_jsonl",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'probes' has no attribute {name!r}")
