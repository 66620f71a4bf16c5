"""Forward time of the KnowBert knowledge layer at the mluke-base shape (random weights): the bare encoder
against the same encoder with the layer after layer 10, with a 10k-entity and a 1.2M-entity table.

KnowBert's claim (Peters et al., 2019, §3.2): candidates are capped (30 per span), so the runtime does not
depend on the kb's size; the layer's overhead over the bare encoder is small (Table 1: 0.25 s -> 0.27 s
forward+backward for BERT-base -> KnowBert-Wiki on a GPU).

Setup: an XLM-R encoder of the mluke-base shape (12 layers, hidden 768, 12 heads, feed-forward 3072;
a 1,000-piece vocabulary, since only the encoder runs: the masked-LM head is left out of every method),
the default knowledge layer (entity dimension 256, span attention on) after layer 10; ``--batch`` (8)
seeded texts of ``--length`` (80) pieces, ``--spans`` (12) spans of 1-5 pieces per text with 30
candidates each (rows below 10,000, so both tables hold them; log priors random). The 1.2M table's first
10k rows are the 10k table, so the two knowledge-layer runs must give identical outputs (checked), and the
model without candidates must give the bare encoder's output bit for bit (checked).

Timing: one process, ``torch.inference_mode``, float32, ``BENCH_THREADS`` threads (2), one warm-up call per
method, then ``--repeats`` rounds in which the three methods run in turn (A, B, C, A, B, C, ...); medians
(and the fastest run of each, less sensitive to other jobs on a shared machine).

    python benchmarks/knowbert_speed.py [--batch 8] [--length 80] [--spans 12] [--repeats 7]
"""

from __future__ import annotations

import json
import statistics
import time

from common import bench_threads, script_parser, xlmr_shape

METHODS = ["bare encoder", "KnowBert, 10k entities", "KnowBert, 1.2M entities"]
SMALL_TABLE, LARGE_TABLE, DIM, CANDIDATES = 10_000, 1_200_000, 256, 30


def main() -> None:
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    from mluke.knowbert import EntityTable, KnowBertModel, SpanCandidates

    ap = script_parser(__doc__, batch=8, length=80, spans=12, repeats=7)
    args = ap.parse_args()
    torch.set_num_threads(bench_threads())
    torch.manual_seed(0)
    encoder = XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=1000, **xlmr_shape(768, 12, 12, 3072))).eval()
    g = torch.Generator().manual_seed(1)
    large = torch.randn(LARGE_TABLE, DIM, generator=g)
    keys = [f"Q{i}" for i in range(LARGE_TABLE)]
    small_model = KnowBertModel(encoder, EntityTable.from_vectors(large[:SMALL_TABLE].clone(), keys[:SMALL_TABLE]))
    large_model = KnowBertModel(encoder, EntityTable.from_vectors(large, keys))
    large_model.kar.load_state_dict(small_model.kar.state_dict())
    small_model.eval(), large_model.eval()

    b, t, s = args.batch, args.length, args.spans
    ids = torch.randint(3, 1000, (b, t), generator=g)
    ids[:, 0], ids[:, -1] = 0, 2
    start = torch.randint(1, t - 6, (b, s), generator=g)
    cands = SpanCandidates(
        span_start=start,
        span_end=start + torch.randint(0, 5, (b, s), generator=g),
        span_mask=torch.ones(b, s, dtype=torch.bool),
        entity_ids=torch.randint(2, SMALL_TABLE, (b, s, CANDIDATES), generator=g),
        log_prior=torch.randn(b, s, CANDIDATES, generator=g).log_softmax(-1),
        candidate_mask=torch.ones(b, s, CANDIDATES, dtype=torch.bool),
    )
    mask = torch.ones_like(ids)
    runs = {
        METHODS[0]: lambda: encoder.base_model(input_ids=ids, attention_mask=mask).last_hidden_state,
        METHODS[1]: lambda: small_model(ids, mask, cands).hidden_states,
        METHODS[2]: lambda: large_model(ids, mask, cands).hidden_states,
    }
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    with torch.inference_mode():
        outputs = {m: run() for m, run in runs.items()}  # the warm-up calls
        if not torch.equal(outputs[METHODS[1]], outputs[METHODS[2]]):
            raise SystemExit("the 10k and 1.2M tables gave different outputs")
        if not torch.equal(small_model(ids, mask).hidden_states, outputs[METHODS[0]]):
            raise SystemExit("without candidates the model is not the bare encoder")
        for _ in range(args.repeats):
            for m, run in runs.items():
                began = time.perf_counter()
                run()
                times[m].append(time.perf_counter() - began)
    medians = {m: statistics.median(v) for m, v in times.items()}
    base = medians[METHODS[0]]
    fastest = {m: min(v) for m, v in times.items()}
    print(f"| method | median ms / batch of {b} | ms / text | vs bare encoder | fastest run, vs bare |")
    print("|---|---:|---:|---:|---:|")
    for m in METHODS:
        ratio = fastest[m] / fastest[METHODS[0]]
        print(
            f"| {m} | {medians[m] * 1e3:.1f} | {medians[m] * 1e3 / b:.1f} | {medians[m] / base:.3f}x "
            f"| {fastest[m] * 1e3:.1f} ms, {ratio:.3f}x |"
        )
    print(f"\n1.2M / 10k entities: {medians[METHODS[2]] / medians[METHODS[1]]:.3f}x")
    kar_params = sum(p.numel() for p in small_model.kar_parameters())
    print(f"knowledge-layer parameters: {kar_params:,}; threads {torch.get_num_threads()}")
    print(json.dumps({m: [round(x, 4) for x in v] for m, v in times.items()}))


if __name__ == "__main__":
    main()
