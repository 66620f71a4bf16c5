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

from probes.bias import bias_by_language, language_bias
from probes.cwr import CwrReport, ParallelSpan, evaluate_cwr, read_mlqa_spans, read_parallel_jsonl
from probes.demo_eval import DemoReport, eval_demo
from probes.linking_calibration import calibrate
from probes.linking_calibration_data import free_wording_docs, ordinary_text_docs
from probes.linking_eval import LinkingReport, eval_link, evaluate_linking
from probes.mewsli import GoldMention, LinkDoc, LinkingSet, read_mewsli
from probes.mlama import read_mlama
from probes.mlama_eval import MlamaComparison, MlamaReport, compare_mlama, eval_mlama
from probes.modularity import modularity, modularity_by_language
from probes.parallel import parallel_spans
from probes.retrieval import SpanIndex, build_index

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
