"""The confidence of a linked mention, and NIL (KnowBert's NULL): a probability in [0, 1] that the chosen
entity is right.

``confidence = link probability x P(top candidate is right | the mention is a link)``

- the link probability is the kb's anchor statistic, or its estimate
  (:mod:`kb.mentions.linkability`): how likely the words are a link at all;
- the second factor is a logistic regression (:class:`Calibration`) over the
  mention's scores (:func:`features`): the posterior of the top candidate among
  the candidates (softmax of the method's scores), its prior p(e|m), its MEP
  log-probability over the *whole* entity vocabulary, relative to uniform (so a
  single candidate the model finds implausible in this context is no longer
  certain), whether the model scored it, the number of candidates, the gap
  between the top candidate and the model's best entity over the whole
  vocabulary (``vocab_gap``: 0 when the model would pick the candidate among all
  entities; very negative when it expects an entity the candidates do not hold),
  and kb coherence (:mod:`mluke.linking.coherence`: whether the top candidate's
  country contradicts a country the text names and nothing else in it accounts for).

A mention is NIL when its confidence is below the threshold (default:
:attr:`Calibration.threshold`). :data:`DEFAULT_CALIBRATION` (without kb coherence) and
:data:`KB_COHERENCE_CALIBRATION` (with it) were fitted by
:func:`probes.linking_calibration.calibrate` on held-out data the library builds
itself (:mod:`probes.linking_calibration_data`: the demo's linking sentences, free
wording, cities beside an unrelated country or none, and the same mentions with their
entity removed from the kb); it is a property of the model it was fitted with,
so fit one for another model and pass it to :class:`mluke.Linker`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject

#: Names of :func:`features`, in order (the weights follow a bias).
FEATURES = (
    "log_posterior",
    "log_prior",
    "model_lift",
    "no_model",
    "log_candidates",
    "vocab_gap",
    "kb_conflict",
)
#: The kb-coherence features: a calibration fitted without them has zero weights there.
KB_FEATURES = ("kb_conflict",)


def features(
    rows: Sequence[dict[str, Any]],
    full_logp: float | None,
    vocab_size: int,
    best_logp: float | None = None,
    conflict: float = 0.0,
) -> list[float]:
    """The calibration features of a mention whose candidates ``rows`` are ranked best first (the
    ``score``/``prior`` dicts of :func:`mluke.linking.scoring.rank_candidates`); ``full_logp``: the top candidate's MEP
    log-probability over the whole entity vocabulary of ``vocab_size`` entities (``None``: not scored);
    ``best_logp``: the best log-probability of any entity under the same normaliser; ``conflict``: 1.0 if the
    top candidate's country contradicts the text (:class:`mluke.linking.coherence.KbCoherence`)."""
    top = rows[0]["score"]
    log_posterior = -math.log(sum(math.exp(r["score"] - top) for r in rows))
    log_prior = math.log(max(rows[0]["prior"], 1e-6))
    lift = 0.0 if full_logp is None else max(full_logp + math.log(max(vocab_size, 1)), -20.0)
    gap = 0.0 if full_logp is None or best_logp is None else max(min(full_logp - best_logp, 0.0), -20.0)
    no_model = 1.0 if full_logp is None else 0.0
    return [log_posterior, log_prior, lift, no_model, math.log(len(rows)), gap, conflict]


@dataclass(frozen=True)
class Calibration:
    """A logistic map from :func:`features` to P(the top candidate is right | the mention is a link),
    and the default NIL threshold on the confidence."""

    weights: tuple[float, ...]  #: bias, then one weight per :data:`FEATURES`
    threshold: float = 0.5
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES) + 1:
            raise ValueError(
                f"a calibration needs {len(FEATURES) + 1} weights (bias, {', '.join(FEATURES)}), "
                f"got {len(self.weights)}"
            )
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"a NIL threshold is a confidence between 0 and 1, got {self.threshold}")

    def probability(self, x: Sequence[float]) -> float:
        z = self.weights[0] + sum(w * v for w, v in zip(self.weights[1:], x))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def to_dict(self) -> JsonObject:
        return {
            "features": list(FEATURES),
            "weights": list(self.weights),
            "threshold": self.threshold,
            "provenance": self.provenance,
        }


def fit_logistic(
    x: Sequence[Sequence[float]], y: Sequence[int], *, l2: float = 1e-3, iterations: int = 50
) -> tuple[float, ...]:
    """Weights (bias first) of an L2-regularised logistic regression, by Newton's method (deterministic)."""
    import numpy as np

    a = np.hstack([np.ones((len(x), 1)), np.asarray(x, dtype=np.float64)])
    t = np.asarray(y, dtype=np.float64)
    w = np.zeros(a.shape[1])
    reg = l2 * np.eye(a.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -50, 50)))
        grad = a.T @ (p - t) + reg @ w
        hess = (a * (p * (1 - p))[:, None]).T @ a + reg + 1e-9 * np.eye(a.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return tuple(round(float(v), 6) for v in w)


#: The default. Fitted by ``OMP_NUM_THREADS=1 python benchmarks/linking_calibration.py
#: ~/.cache/mluke/demo-model-v5`` (2026-11-25) on the cached demo model (version 5, 3,290 steps), on 9,700 decisions:
#: the fit halves (by (city, language) pair) of the four sets of :mod:`probes.linking_calibration_data` (the demo's
#: linking set, its free wording, ordinary text with a city beside an unrelated country, and with no country), gold
#: and with the entity missing from the kb (candidates and normaliser), methods combined and prior, without the
#: kb-coherence feature; threshold = best accuracy keeping >= 90% of right ambiguous links on the fit half. Chosen
#: by :func:`probes.linking_calibration.choose_default`: it keeps 87.6-99.6% of right ambiguous links on every
#: held-out half (the fit with kb coherence keeps 60.2% beside an unrelated country) at a low NIL recall (0-8%).
DEFAULT_CALIBRATION = Calibration(
    weights=(-1.584436, 0.781617, -0.590308, 0.582754, 1.75109, -0.598907, -0.361965, 0.0),
    threshold=0.15,
    provenance={
        "model": "demo-model-v5 (3,290 steps)",
        "decisions": 9700,
        "sets": "template, free, unrelated country, no country (fit halves)",
        "features": "without kb_conflict",
        "date": "2026-11-25",
        "command": "OMP_NUM_THREADS=1 python benchmarks/linking_calibration.py ~/.cache/mluke/demo-model-v5",
    },
)

#: The same fit with the kb-coherence feature (``kb_conflict``, weight -2.7: the data now shows it on right links
#: beside an unrelated country as well as on NIL). NIL recall 11-43% where the text names a country (0% without
#: one), but only 60.2% of right ambiguous links beside an unrelated country kept, and "Chad" in "Chad Smith"
#: linked. Opt-in: ``Linker(..., calibration=KB_COHERENCE_CALIBRATION)``. Figures in benchmarks/RESULTS.md
#: ("NIL calibration on ordinary text", issue 28). Refit for any other model.
KB_COHERENCE_CALIBRATION = Calibration(
    weights=(-0.145956, 0.366313, -0.346049, 0.466126, 1.370087, -0.433443, -0.295928, -2.700344),
    threshold=0.1,
    provenance={
        "model": "demo-model-v5 (3,290 steps)",
        "decisions": 9700,
        "sets": "template, free, unrelated country, no country (fit halves)",
        "features": "all (with kb coherence)",
        "date": "2026-11-25",
        "command": "OMP_NUM_THREADS=1 python benchmarks/linking_calibration.py ~/.cache/mluke/demo-model-v5",
    },
)
