"""The MEP normaliser over a whole entity vocabulary from an int8 copy of the entity table: the
``log-sum-exp`` of every entity's logit and the best logit, for the linker's confidence features.

The exact normaliser (:func:`mluke.models.masked_lm.chunked_logsumexp_max`) is a float32 matrix product
of the mentions with the whole table (1.2M x 256 for mluke-base) and an ``exp`` of every logit: on a CPU
it costs as much per mention as most of the encoder. Here the table is quantised once per model, one
symmetric scale per row (:func:`quantize_rows`, a quarter of the float32 table's memory), each batch of
features one scale per feature row, and the products run in torch's int8 matrix product
(``torch._int_mm``, exact int32 sums; VNNI on x86 CPUs); the logits are taken in base 2 (``exp2`` is
several times cheaper than ``exp`` on a CPU), with ``log2(e)`` folded into the scales and the bias.

The int8 pass also keeps, per block of :data:`BLOCK` table rows, the log of its share of the sum and
its largest logit; the :data:`HEAVY_BLOCKS` blocks of the largest share (the block of the largest logit
among them, in place of the last) are then recomputed in float32 and replace their int8 share. So a
peaked distribution (a trained model sure of a few entities) has its normaliser and best logit from
float32, and a table of at most ``HEAVY_BLOCKS x BLOCK`` entities is all float32. Error: the int8 part
moves the log-sum-exp by at most the largest error of one of its logits times the share of those blocks
(log-sum-exp is 1-Lipschitz in the largest coordinate), and in practice by far less, since rounding
errors of a million logits average out (about 1e-4 nats on a random mluke-base-shaped table, see
``benchmarks/link_cost.py``); the best logit is exact unless the best entity of another block is closer
than that rounding error, and then off by at most it. A mention's results do not depend on the other
mentions of its batch (one scale per feature row).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

#: How the normaliser over the whole entity vocabulary is computed: "int8" (this module; CPU only, the
#: exact one elsewhere) or "exact" (float32, :func:`mluke.models.masked_lm.chunked_logsumexp_max`).
Normaliser = Literal["int8", "exact"]
#: The values of :data:`Normaliser`.
NORMALISERS: tuple[str, ...] = ("int8", "exact")

LOG2E = 1.0 / math.log(2.0)
#: Rows of the table per block: the unit that is recomputed in float32.
BLOCK = 128
#: Blocks recomputed in float32 per mention: those of the largest share of the normaliser.
HEAVY_BLOCKS = 8
#: The smallest scale of a row (all-zero rows quantise to zeros, not to nan).
TINY = 1e-30


@dataclass(frozen=True)
class Int8Rows:
    """A float table (+ bias) quantised row by row to int8 for :func:`int8_logsumexp_max`.

    ``values``: (vocab, dims) int8; ``scales``: (vocab,) float32, each row's scale times ``log2(e)``;
    ``bias``: (vocab,) float32 bias times ``log2(e)``; ``source``: the identity of the table and bias it
    was made from (storage, version, shape, device), to know when it is stale.
    """

    values: Tensor
    scales: Tensor
    bias: Tensor
    source: tuple[object, ...]


def table_identity(table: Tensor, bias: Tensor) -> tuple[object, ...]:
    """What identifies a table and bias for :class:`Int8Rows`: their storage, in-place versions, shapes and device
    (an optimiser step or ``load_state_dict`` changes the version, ``.to(...)`` the storage)."""
    return (table.data_ptr(), table._version, tuple(table.shape), bias.data_ptr(), bias._version, str(table.device))


@torch.no_grad()
def quantize_rows(table: Tensor, bias: Tensor, chunk_size: int = 65_536) -> Int8Rows:
    """``table`` (vocab, dims) and ``bias`` (vocab,) as :class:`Int8Rows` (symmetric, one scale per row),
    ``chunk_size`` rows at a time (no float copy of the whole table)."""
    values = torch.empty(table.shape, dtype=torch.int8, device=table.device)
    scales = torch.empty(table.shape[0], dtype=torch.float32, device=table.device)
    for start in range(0, table.shape[0], chunk_size):
        rows = table[start : start + chunk_size].float()
        scale = rows.abs().amax(dim=1).clamp_min(TINY) / 127.0
        values[start : start + chunk_size] = torch.round(rows / scale[:, None]).clamp_(-127, 127).to(torch.int8)
        scales[start : start + chunk_size] = scale * LOG2E
    return Int8Rows(values, scales, bias.detach().float() * LOG2E, table_identity(table, bias))


@torch.no_grad()
def int8_logsumexp_max(
    features: Tensor,
    rows: Int8Rows,
    table: Tensor,
    bias: Tensor,
    chunk_size: int,
    exclude: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``logsumexp(features @ table.T + bias, -1)`` and the largest logit of each row, from ``rows`` (the int8
    copy of ``table`` and ``bias``), the :data:`HEAVY_BLOCKS` heaviest blocks of rows (the block of the best
    logit among them) recomputed in float32 from ``table``: ((n,), (n,)) float32 (see the module docs for the error).

    features: (n, dims). ``exclude``: (n, k) vocabulary ids left out of row i's sum and maximum (-1: none).
    ``chunk_size``: rows of the table per step (rounded to whole blocks).
    """
    f = features.reshape(-1, features.shape[-1]).float()
    n, device = f.shape[0], f.device
    fscale = f.abs().amax(dim=1).clamp_min(TINY) / 127.0
    fq = torch.round(f / fscale[:, None]).clamp_(-127, 127).to(torch.int8).T.contiguous()  # (dims, n)
    if exclude is not None:
        exclude = exclude.reshape(n, -1).to(device)
    step = max(BLOCK, chunk_size // BLOCK * BLOCK)
    sums, maxima = [], []  # per block of rows: log2 of its sum of 2^logit, its largest logit (base 2); (blocks, n)
    for start in range(0, rows.values.shape[0], step):
        stop = start + step
        products = torch._int_mm(rows.values[start:stop], fq)  # (chunk, n) int32, exact
        logits = products.float().mul_(rows.scales[start:stop, None]).mul_(fscale).add_(rows.bias[start:stop, None])
        _leave_out(logits, exclude, start, stop)
        top = _blocks(logits, torch.amax)
        shift = top.amax(dim=0)
        shift = torch.where(torch.isfinite(shift), shift, 0.0)  # columns whose logits here are all left out
        sums.append(_blocks(logits.sub_(shift).exp2_(), torch.sum).log2_().add_(shift))
        maxima.append(top)
    block_sums, block_maxima = torch.cat(sums), torch.cat(maxima)
    heavy = block_sums.topk(min(HEAVY_BLOCKS, block_sums.shape[0]), dim=0).indices.T  # (n, k)
    best = block_maxima.argmax(dim=0)
    missing = ~(heavy == best[:, None]).any(dim=1)  # the best logit's block takes the place of the lightest
    heavy[missing, -1] = best[missing]
    rest = block_sums.scatter(0, heavy.T, float("-inf")).mul_(1.0 / LOG2E).logsumexp(dim=0)  # natural log
    exact_sum, exact_max = _exact_blocks(f, table, bias, heavy, exclude)
    return torch.logaddexp(exact_sum, rest), exact_max


def _blocks(logits: Tensor, reduce: Callable[..., Tensor]) -> Tensor:
    """``reduce`` (``torch.amax``, ``torch.sum``) over each :data:`BLOCK` of rows of ``logits`` (rows, n) (the
    last block may be shorter): (blocks, n)."""
    rows, n = logits.shape
    whole = rows // BLOCK * BLOCK
    parts = [reduce(logits[:whole].view(-1, BLOCK, n), dim=1)] if whole else []
    if whole < rows:
        parts.append(reduce(logits[whole:], dim=0, keepdim=True))
    return torch.cat(parts)


def _leave_out(logits: Tensor, exclude: Tensor | None, start: int, stop: int) -> None:
    """Set to -inf, in ``logits`` ((rows, n), vocabulary rows ``start:stop``), the ids of ``exclude`` ((n, k))."""
    if exclude is None:
        return
    hit = (exclude >= start) & (exclude < stop)
    if hit.any():
        columns = torch.arange(exclude.shape[0], device=exclude.device)[:, None].expand_as(exclude)
        logits[exclude[hit] - start, columns[hit]] = float("-inf")


def _exact_blocks(
    f: Tensor, table: Tensor, bias: Tensor, blocks: Tensor, exclude: Tensor | None, group: int = 16
) -> tuple[Tensor, Tensor]:
    """The float32 log-sum-exp and largest logit of each row of ``f`` (n, dims) over its ``blocks`` ((n, k) block
    numbers, distinct per row) of ``table``, ``group`` rows of ``f`` at a time; ``exclude``: ids left out."""
    sums = torch.empty(f.shape[0], dtype=torch.float32, device=f.device)
    maxima = torch.empty_like(sums)
    within = torch.arange(BLOCK, device=f.device)
    for a in range(0, f.shape[0], group):
        ids = (blocks[a : a + group, :, None] * BLOCK + within).flatten(1)  # (g, k * BLOCK)
        out = ids >= table.shape[0]
        ids = ids.clamp_max(table.shape[0] - 1)
        logits = torch.einsum("gd,gkd->gk", f[a : a + group], table[ids].float()) + bias[ids].float()
        if exclude is not None:
            out |= (ids[:, :, None] == exclude[a : a + group, None, :]).any(-1)
        logits = logits.masked_fill(out, float("-inf"))
        sums[a : a + group] = logits.logsumexp(dim=-1)
        maxima[a : a + group] = logits.amax(dim=-1)
    return sums, maxima
