"""probes: mLAMA evaluation, language bias, the demo model's evaluation, and entity-linking evaluation.

The outer layer of the library: uses both :mod:`kb` and :mod:`mluke`; nothing in
those imports ``probes`` back. Each ``eval_*`` function is what the ``mluke``
command of the same name does.

- :func:`eval_mlama` / :func:`read_mlama` — mLAMA 1.1 folders, P@1 macro-averaged over relations
  (:class:`MlamaReport`);
- :func:`language_bias` — top false-positive prediction and its share (paper, Table 6);
- :func:`eval_demo` — the demo model on held-out vs training (fact, language) pairs and its
  ambiguous-city linking set (:class:`DemoReport`);
- :func:`eval_link` / :func:`evaluate_linking` / :func:`read_mewsli` (:mod:`probes.mewsli`) — Mewsli-9 folders (:class:`LinkingSet`
  of :class:`LinkDoc` with :class:`GoldMention`), in-KB / ambiguous accuracy and end-to-end P/R/F1 per
  language and method (:class:`LinkingReport`).
"""

from probes.bias import language_bias
from probes.demo_eval import DemoReport, eval_demo
from probes.linking_eval import LinkingReport, eval_link, evaluate_linking
from probes.mewsli import GoldMention, LinkDoc, LinkingSet, read_mewsli
from probes.mlama import MlamaReport, eval_mlama, read_mlama

__all__ = ["DemoReport", "GoldMention", "LinkDoc", "LinkingReport", "LinkingSet", "MlamaReport", "eval_demo",
           "eval_link", "eval_mlama", "evaluate_linking", "language_bias", "read_mewsli", "read_mlama"]
