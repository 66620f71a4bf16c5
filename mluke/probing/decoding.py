"""Open-vocabulary word answers of several pieces, decoded as X-FACTR does (Jiang et al., EMNLP 2020).

For each answer length n = 1..``max_pieces``, [Y] becomes n masks, and the masks are filled:

- ``"independent"``: all n from one forward pass, each mask's pieces taken on their own;
- ``"left-to-right"``: one mask per step, the leftmost first; the filled piece is put in the input
  and the model runs again for the next mask;
- ``"confidence"``: one mask per step, the one whose best piece is the most probable first, then
  the model runs again.

Each keeps a beam of ``beam`` partial answers: at every step each answer is extended by its
``beam`` best pieces at the mask being filled, and the ``beam`` answers with the highest sum of
log-probabilities stay. An answer's score is the mean log-probability of its n pieces (each taken
when it was filled), which ranks answers of different lengths together; identical strings keep
their best score. Special pieces are never answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from kb.db import Template
from kb.errors import MlukeError, option

Method = Literal["independent", "left-to-right", "confidence"]
METHODS = ("independent", "left-to-right", "confidence")


@dataclass(frozen=True)
class Answer:
    """A decoded answer: its pieces, the text they spell, and the mean log-probability of the pieces."""

    pieces: tuple[int, ...]
    text: str
    score: float


@dataclass
class _Hyp:
    ids: list[int]  # the n pieces, -1 where still a mask
    total: float  # sum of the log-probabilities of the filled pieces


def decode(
    model: Any,
    tokenizer: Any,
    template: Template,
    subjects: Sequence[str],
    *,
    max_pieces: int = 5,
    method: Method = "confidence",
    beam: int = 5,
    top_k: int = 5,
    exclude: Sequence[int] = (),
    batch_size: int = 64,
) -> list[list[Answer]]:
    """The ``top_k`` answers of 1..``max_pieces`` pieces for each subject, best first (see module docs).

    ``model``: ``encode(**inputs)`` and ``word_scores(states)`` (an mLUKE model or a
    :class:`mluke.models.word_models.WordModel`); ``tokenizer``: ``tokenizer(texts)``, ``mask_id``,
    ``decode(ids)`` or ``hf.decode``. ``exclude``: piece ids never filled in (special tokens).
    """
    if method not in METHODS:
        raise MlukeError(
            "{method}: expected 'independent', 'left-to-right' or 'confidence'",
            options={"method": option("decoding", method)},
        )
    for name, value in (("max_pieces", max_pieces), ("beam", beam)):
        if not isinstance(value, int) or value < 1:
            raise MlukeError(f"{{{name}}}: expected a positive number", options={name: option(name, value)})
    mask_token = getattr(tokenizer, "mask_token", "<mask>")
    drop = torch.tensor(sorted(set(exclude)), dtype=torch.long)
    # an mLUKE tokenizer's ids end below the model's word rows when the embeddings were padded to a multiple
    # (resize_token_embeddings(pad_to_multiple_of=...)): the rows past them spell nothing and are never answers
    n_words = tokenizer.vocab_size if hasattr(tokenizer, "entity_ids") else None
    found: list[dict[str, Answer]] = [{} for _ in subjects]
    for n in range(1, max_pieces + 1):
        enc = tokenizer([template.fill(s, mask_token * n) for s in subjects])
        ids, attention = enc["input_ids"], enc["attention_mask"]
        where = [(row == tokenizer.mask_id).nonzero().flatten() for row in ids]
        if any(len(w) != n for w in where):
            raise MlukeError(f"{n} masks at [Y] do not fit in the model's input: a prompt is too long")
        beams = [[_Hyp([-1] * n, 0.0)] for _ in subjects]
        for _ in range(1 if method == "independent" else n):
            flat = [(i, h) for i, hs in enumerate(beams) for h in hs]
            logps = _mask_logps(model, ids, attention, where, flat, drop, batch_size, n_words)
            new: list[list[_Hyp]] = [[] for _ in subjects]
            for (i, h), logp in zip(flat, logps):  # logp: (n, vocab) at this answer's masks
                new[i] += _extend(h, logp, method, beam)
            beams = [sorted(hs, key=lambda h: -h.total)[:beam] for hs in new]
        for i, hs in enumerate(beams):
            for h in hs:
                text = _text(tokenizer, h.ids)
                answer = Answer(tuple(h.ids), text, h.total / n)
                if text and (text not in found[i] or found[i][text].score < answer.score):
                    found[i][text] = answer
    return [sorted(f.values(), key=lambda a: -a.score)[:top_k] for f in found]


def _extend(h: _Hyp, logp: torch.Tensor, method: str, beam: int) -> list[_Hyp]:
    """The answers one step of ``method`` makes of ``h`` (``logp``: (n, vocab) at its n masks)."""
    open_ = [j for j, v in enumerate(h.ids) if v < 0]
    if method == "independent":  # every mask at once: a beam over the masks, left to right, one pass
        hyps = [h]
        for j in open_:
            top = logp[j].topk(beam)
            hyps = sorted(
                (
                    _Hyp([*x.ids[:j], int(t), *x.ids[j + 1 :]], x.total + float(v))
                    for x in hyps
                    for v, t in zip(top.values, top.indices)
                ),
                key=lambda x: -x.total,
            )[:beam]
        return hyps
    j = open_[0] if method == "left-to-right" else max(open_, key=lambda k: float(logp[k].max()))
    top = logp[j].topk(beam)
    return [_Hyp([*h.ids[:j], int(t), *h.ids[j + 1 :]], h.total + float(v)) for v, t in zip(top.values, top.indices)]


@torch.inference_mode()
def _mask_logps(
    model: Any,
    ids: torch.Tensor,
    attention: torch.Tensor,
    where: list[torch.Tensor],
    flat: list[tuple[int, _Hyp]],
    drop: torch.Tensor,
    batch_size: int,
    n_words: int | None = None,
) -> list[torch.Tensor]:
    """(n, vocab) log-probabilities at the n masks of each partial answer, filled pieces put in place;
    ``batch_size`` answers per forward pass; ids from ``n_words`` on (padded rows) are never filled in."""
    out: list[torch.Tensor] = []
    for start in range(0, len(flat), batch_size):
        part = flat[start : start + batch_size]
        rows = ids[[i for i, _ in part]].clone()
        for r, (i, h) in enumerate(part):
            filled = torch.tensor(h.ids)
            keep = filled >= 0
            rows[r, where[i][keep]] = filled[keep]
        words, _ = model.encode(input_ids=rows, attention_mask=attention[[i for i, _ in part]])
        positions = torch.stack([where[i] for i, _ in part]).to(words.device)  # (b, n)
        states = words[torch.arange(len(part), device=words.device)[:, None], positions]  # (b, n, hidden)
        logp = model.word_scores(states.reshape(-1, states.shape[-1])).float().cpu()
        if len(drop):
            logp[:, drop] = float("-inf")
        if n_words is not None:
            logp[:, n_words:] = float("-inf")
        out += list(logp.view(len(part), positions.shape[1], -1))
    return out


def _text(tokenizer: Any, pieces: Sequence[int]) -> str:
    """The text the pieces spell (word-start markers and WordPiece joins resolved by the tokenizer)."""
    hf = getattr(tokenizer, "hf", None)
    text: str = hf.decode(list(pieces)) if hf is not None else tokenizer.decode(list(pieces))
    return text.strip()
