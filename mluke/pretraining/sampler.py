"""Language-balanced sampling of training sequences, deterministic and resumable.

Language i is drawn with probability p_i = n_i^alpha / sum_k n_k^alpha (n_i =
sequences of language i; alpha = 0.7 in mLUKE), which up-samples small
languages. Within a language, sequences are visited in a fresh permutation on
every pass. The whole order is a function of the seed: the sampler state is a
step counter and, per language, its pass and position.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def language_probabilities(sizes: dict[str, int], alpha: float) -> dict[str, float]:
    """p_i proportional to n_i ** alpha over languages with at least one sequence."""
    langs = sorted(l for l, n in sizes.items() if n > 0)
    if not langs:
        raise ValueError("no language has any sequence to sample from")
    weights = np.array([sizes[l] for l in langs], dtype=np.float64) ** alpha
    return dict(zip(langs, (weights / weights.sum()).tolist()))


class LanguageSampler:
    """Draws ``(lang, index)`` pairs for each global batch."""

    def __init__(self, sizes: dict[str, int], alpha: float, seed: int) -> None:
        self.sizes = {l: n for l, n in sizes.items() if n > 0}
        self.probs = language_probabilities(self.sizes, alpha)
        self.langs = list(self.probs)
        self._p = np.array([self.probs[l] for l in self.langs])
        self.seed = seed
        self.step = 0
        self.cursor = {l: [0, 0] for l in self.langs}  # [pass, position]
        self._perm: dict[str, tuple[int, np.ndarray]] = {}

    def _order(self, lang: str, epoch: int) -> np.ndarray:
        cached = self._perm.get(lang)
        if cached is None or cached[0] != epoch:
            rng = np.random.default_rng([self.seed, self.langs.index(lang), epoch, 7])
            cached = (epoch, rng.permutation(self.sizes[lang]))
            self._perm[lang] = cached
        return cached[1]

    def next_batch(self, size: int) -> list[tuple[str, int]]:
        """The next ``size`` sequences of the global order."""
        rng = np.random.default_rng([self.seed, self.step, 3])
        picks = rng.choice(len(self.langs), size=size, p=self._p)
        out = []
        for k in picks:
            lang = self.langs[k]
            epoch, pos = self.cursor[lang]
            out.append((lang, int(self._order(lang, epoch)[pos])))
            pos += 1
            if pos == self.sizes[lang]:
                epoch, pos = epoch + 1, 0
            self.cursor[lang] = [epoch, pos]
        self.step += 1
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "step": self.step,
            "cursor": {l: list(c) for l, c in self.cursor.items()},
            "sizes": self.sizes,
            "probs": self.probs,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["sizes"] != self.sizes or state["seed"] != self.seed:
            raise ValueError("the checkpoint's sampler was built on another corpus or seed; cannot resume exactly")
        self.step = int(state["step"])
        self.cursor = {l: list(c) for l, c in state["cursor"].items()}
