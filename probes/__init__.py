"""probes: mLAMA evaluation, language bias, the demo model's transfer evaluation, and the paper's analyses.

Uses both :mod:`kb` and :mod:`mluke`; nothing in those imports ``probes`` back.

- :func:`evaluate_mlama` / :func:`read_mlama` — mLAMA 1.1 folders, P@1 macro-averaged over relations;
- :func:`language_bias` — top false-positive prediction and its share (paper, Table 6);
- :func:`evaluate_demo` — held-out vs training (fact, language) pairs of the demo model;
- :func:`read_mewsli` / :func:`evaluate_linking` — Mewsli-9 folders (:class:`LinkingSet` of :class:`LinkDoc`
  with :class:`GoldMention`), in-KB / ambiguous accuracy and end-to-end P/R/F1 per language and method
  (:class:`LinkingReport`).
"""

from probes.bias import language_bias
from probes.demo_eval import evaluate_demo
from probes.linking_eval import GoldMention, LinkDoc, LinkingReport, LinkingSet, evaluate_linking, read_mewsli
from probes.mlama import MlamaReport, evaluate_mlama, read_mlama

__all__ = ["GoldMention", "LinkDoc", "LinkingReport", "LinkingSet", "MlamaReport", "evaluate_demo", "evaluate_linking",
           "evaluate_mlama", "language_bias", "read_mewsli", "read_mlama"]
