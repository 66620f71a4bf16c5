"""Batched cloze scoring with one model: MEP scores of candidate entities at an entity [MASK],
and mLAMA's word-mask scores; what :func:`mluke.probe` ranks candidates with. The model may sit on any
device and in any precision; scores come back as float32 CPU tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from kb.db import Template
from kb.errors import MlukeError

#: Prompts whose entity scores share one pass of the full-vocabulary normaliser (measured on a
#: 1.2M x 256 table on 2 cores: about 10 ms per row at 32 rows, 6 ms at 128).
NORMALIZER_ROWS = 128


class ClozeScorer:
    """Batched cloze scoring with one model (see module docs)."""

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 64, lang: str | None = None) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        #: keywords of word-mode tokenizer calls: the prompts' language, for tokenizers that read it (KnowBert's)
        self._prompts = {"lang": lang} if getattr(tokenizer, "reads_language", False) else {}
        self.vocab = tokenizer.entity_vocab
        self.batch_size = batch_size
        #: the word mask as text: ``<mask>`` for mLUKE and XLM-R, ``[MASK]`` for BERT, ...
        self.mask_token: str = getattr(tokenizer, "mask_token", "<mask>")

    def candidate_pieces(self, labels: Sequence[str], template: Template | None = None) -> list[list[int]]:
        """Word pieces of each candidate as it would stand at [Y] of ``template``: a byte-level BPE
        tokenizer (``space_prefix``) encodes a word after a space differently from one opening the text."""
        if (
            template is not None
            and getattr(self.tokenizer, "space_prefix", False)
            and template.text.lstrip().startswith("[Y]")
        ):
            return self.tokenizer.encode_words(list(labels), at_start=True)
        return self.tokenizer.encode_words(list(labels))

    @torch.inference_mode()
    def entity_scores(
        self,
        template: Template,
        subjects: Sequence[str],
        candidate_ids: torch.Tensor,
        subject_ids: Sequence[int | None] | None = None,
        *,
        normalize: bool = True,
    ) -> torch.Tensor:
        """(n_subjects, n_candidates) MEP log-probabilities with the entity [MASK] over [Y]
        (unnormalised logits, which rank alike, when not ``normalize``).

        The encoder runs ``batch_size`` prompts at a time; the states at [Y] are then
        scored :data:`NORMALIZER_ROWS` at a time, because the full-vocabulary
        normaliser reads the whole entity table once per call, whatever the rows.
        """
        if not len(subjects):
            return torch.zeros(0, len(candidate_ids))
        hidden = self.mask_states(template, subjects, subject_ids)
        return (
            torch.cat(
                [
                    self.model.entity_scores(hidden[i : i + NORMALIZER_ROWS], candidate_ids, normalize=normalize)
                    for i in range(0, len(hidden), NORMALIZER_ROWS)
                ]
            )
            .float()
            .cpu()
        )

    @torch.inference_mode()
    def entity_topk(
        self,
        template: Template,
        subjects: Sequence[str],
        k: int,
        subject_ids: Sequence[int | None] | None = None,
        *,
        exclude: Sequence[int] = (),
        exclude_subject: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Open-vocabulary answers: the ``k`` best entities of the whole entity vocabulary for [Y]
        (the entity [MASK]), as (n_subjects, k) MEP log-probabilities and (n_subjects, k) ids.

        ``exclude``: ids never answered (the special entities); with ``exclude_subject`` a
        subject's own id (``subject_ids``) is not an answer to it either. The table is read
        once per :data:`NORMALIZER_ROWS` prompts.
        """
        hidden = self.mask_states(template, subjects, subject_ids)
        drop = torch.tensor(list(exclude), dtype=torch.long)
        own = torch.tensor(
            [(i if i is not None and exclude_subject else -1) for i in (subject_ids or [None] * len(subjects))],
            dtype=torch.long,
        )
        parts = [
            self.model.entity_topk(
                hidden[i : i + NORMALIZER_ROWS], k, exclude=drop, row_exclude=own[i : i + NORMALIZER_ROWS]
            )
            for i in range(0, len(hidden), NORMALIZER_ROWS)
        ]
        width = min(p[0].shape[1] for p in parts)
        return (
            torch.cat([p[0][:, :width] for p in parts]).float().cpu(),
            torch.cat([p[1][:, :width] for p in parts]).cpu(),
        )

    def mask_states(
        self, template: Template, subjects: Sequence[str], subject_ids: Sequence[int | None] | None = None
    ) -> torch.Tensor:
        """(n_subjects, hidden) last-layer states at the entity [MASK] over [Y], with the subject's
        entity over [X] where ``subject_ids`` gives one; ``batch_size`` prompts per encoder pass."""
        states = []
        for start in range(0, len(subjects), self.batch_size):
            texts, spans, ents = [], [], []
            for i in range(start, min(start + self.batch_size, len(subjects))):
                text, (xs, xe), (ys, ye) = template.fill_spans(subjects[i], "<mask>")
                sid = subject_ids[i] if subject_ids is not None else None
                texts.append(text)
                spans.append([(ys, ye)] + ([(xs, xe)] if sid is not None else []))
                ents.append([None] + ([sid] if sid is not None else []))
            enc = self.tokenizer(texts, entity_spans=spans, entities=ents)
            states.append(self.model.encode_entities(**enc)[:, 0])
        return torch.cat(states)

    @torch.inference_mode()
    def word_scores(self, template: Template, subjects: Sequence[str], pieces: Sequence[Sequence[int]]) -> torch.Tensor:
        """(n_subjects, n_candidates) mean log-probability of each candidate's pieces at its number of masks.

        One prompt per subject and candidate length (not per candidate); the prompts of all lengths run
        ``batch_size`` at a time, and the word head is applied once per batch, at the masks only, for
        the pieces some candidate has."""
        scores = torch.full((len(subjects), len(pieces)), float("-inf"))
        by_len: dict[int, list[int]] = {}
        for c, p in enumerate(pieces):
            if p:
                by_len.setdefault(len(p), []).append(c)
        if not by_len or not len(subjects):
            return scores
        uniq = torch.unique(torch.tensor([i for c in by_len.values() for k in c for i in pieces[k]]))
        # per length: the candidates and, per mask position, the column of each one's piece in ``uniq``
        columns = {n: torch.searchsorted(uniq, torch.tensor([pieces[c] for c in cands])) for n, cands in by_len.items()}
        prompts = [(s, n) for s in range(len(subjects)) for n in sorted(by_len)]
        mask_id = self.tokenizer.mask_id
        for start in range(0, len(prompts), self.batch_size):
            part = prompts[start : start + self.batch_size]
            batch = [template.fill(subjects[s], self.mask_token * n) for s, n in part]
            enc = self.tokenizer(batch, **self._prompts)
            words, _ = self.model.encode(**enc)
            where = enc["input_ids"].to(words.device) == mask_id
            if where.sum(1).tolist() != [n for _, n in part]:
                raise MlukeError(
                    "the masks at [Y] do not fit in the model's input: a prompt is too long "
                    f"(first of the batch: {batch[0][:80]!r})"
                )
            logp = self.model.word_scores(words[where], uniq).float().cpu()  # (masks of the batch, len(uniq))
            row = 0
            for s, n in part:  # masks come row by row, left to right
                cols = columns[n]
                scores[s, by_len[n]] = sum(logp[row + i, cols[:, i]] for i in range(n)) / n
                row += n
        return scores


def over_candidates(scores: torch.Tensor) -> torch.Tensor:
    """Log-scores (subjects x candidates) renormalised over each row's candidates; rows with no finite score stay."""
    total = torch.logsumexp(scores, dim=-1, keepdim=True)
    return torch.where(torch.isfinite(total), scores - total, scores)
