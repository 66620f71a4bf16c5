"""Memory and disk of a KnowBert model whose entity table is its mLUKE encoder's own, at mluke-base's table size
(1,200,001 x 256 float32: 1,229 MB).

The encoder is a small random mLUKE masked LM (hidden 64, 2 layers, 1,000 word pieces) with the full-size entity
embedding and an entity vocabulary in mluke-base's order ([PAD] first), so that the table is nearly all of the
model and every copy of it shows. Two steps, each in a fresh process (peak RSS: the process's VmHWM):

- ``build``: ``KnowBertModel.from_encoder`` on the encoder (its own table), the RSS it adds, then
  ``save_pretrained``: the bytes of each file written;
- ``load``: ``KnowBertModel.from_pretrained`` of that folder and one forward with candidates: the RSS loading adds
  and the peak; the hidden states are kept for the equality check.

With ``--baseline REF`` the same steps run on the code of git commit REF too (exported with ``git archive`` into
``<work>/code-REF`` and put first on ``PYTHONPATH``), interleaved with ours, and ours also loads the folder REF
wrote (the old layout). Every load's hidden states must be equal (the same seeds build the same weights).

    python benchmarks/knowbert_memory.py [--baseline REF] [--entities 1200001] [--dims 256] [--repeats 1]
                                         [--out benchmarks/results/knowbert_memory.json] [--smoke]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from common import benchmark_parser, peak_rss_mb, smoke_folder

HERE = Path(__file__).resolve().parent
#: the small encoder around the table
ENCODER = {"vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}


def rss_mb() -> float:
    """VmRSS of this process, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def make_vocab(path: Path, entities: int) -> None:
    """The entity vocabulary of the encoder: the four special entities ([PAD] first), then ``Q4`` ...."""
    from kb.vocab import SPECIAL_ENTITIES, EntityVocab, VocabEntry

    if path.exists():
        return
    specials = [VocabEntry(i, None, name, 0, ()) for i, name in enumerate(SPECIAL_ENTITIES)]
    others = (VocabEntry(i, f"Q{i}", None, 0, (("en", f"Entity {i}"),)) for i in range(4, entities))
    EntityVocab.from_entries(itertools.chain(specials, others), path, provenance={"builder": "benchmark"})


def build(folder: Path, vocab_path: Path, entities: int, dims: int) -> dict:
    """from_encoder on the random encoder, then save_pretrained into ``folder``."""
    import torch
    from transformers import LukeConfig

    from kb.vocab import EntityVocab
    from mluke.knowbert import KnowBertModel
    from mluke.models.masked_lm import MlukeForMaskedLM

    vocab = EntityVocab(vocab_path)
    sizes = {"entity_vocab_size": entities, "entity_emb_size": dims, "use_entity_aware_attention": False}
    config = LukeConfig(**ENCODER, intermediate_size=128, **sizes)
    torch.manual_seed(0)
    encoder = MlukeForMaskedLM(config).eval()
    before = rss_mb()
    torch.manual_seed(1)
    model = KnowBertModel.from_encoder((encoder, None, vocab))  # type: ignore[arg-type]
    added = rss_mb() - before
    model.save_pretrained(folder, overwrite=True)
    files = {f.name: f.stat().st_size for f in sorted(folder.iterdir())}
    return {"from_encoder_adds_mb": round(added, 1), "files": files, "peak_rss_mb": round(peak_rss_mb(), 1)}


def load(folder: Path, hidden_path: Path, entities: int) -> dict:
    """from_pretrained of ``folder`` and one forward with candidates (hidden states written to ``hidden_path``)."""
    import torch

    from mluke.knowbert import KnowBertModel, SpanCandidates

    before = rss_mb()
    started = time.perf_counter()
    model = KnowBertModel.from_pretrained(folder)
    seconds = time.perf_counter() - started
    added = rss_mb() - before
    ids = torch.tensor([[0, 5, 6, 7, 8, 9, 2]])
    rows = torch.tensor([[[4, entities // 2, entities - 1], [5, 6, 0]]])
    candidates = SpanCandidates(
        span_start=torch.tensor([[1, 4]]),
        span_end=torch.tensor([[2, 4]]),
        span_mask=torch.tensor([[True, True]]),
        entity_ids=rows,
        log_prior=torch.log(torch.tensor([[[0.6, 0.3, 0.1], [0.9, 0.1, 1.0]]])),
        candidate_mask=torch.tensor([[[True, True, True], [True, True, False]]]),
    )
    with torch.no_grad():
        hidden = model(ids, None, candidates).hidden_states
    torch.save(hidden, hidden_path)
    peak = round(peak_rss_mb(), 1)
    return {"from_pretrained_adds_mb": round(added, 1), "load_s": round(seconds, 2), "peak_rss_mb": peak}


def export_code(ref: str, work: Path) -> Path:
    """The repository's packages at git commit ``ref``, exported into ``<work>/code-REF`` (once)."""
    folder = work / f"code-{ref}"
    if not folder.exists():
        tmp = folder.with_name(folder.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", ref, "kb", "mluke", "probes"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        tmp.rename(folder)
    return folder


def child(step: str, code: Path | None, args: list[str]) -> dict:
    """Run ``--measure step`` in a fresh process, with the packages of ``code`` first on its path."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, __file__, "--measure", step, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = benchmark_parser(__doc__, HERE / "work" / "knowbert-memory")
    ap.add_argument("--baseline", help="git commit whose code is measured too (e.g. the one before a change)")
    ap.add_argument("--entities", type=int, default=1_200_001)
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "knowbert_memory.json")
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--hidden", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        vocab = args.work / f"vocab-{args.entities}.sqlite"
        if args.measure == "build":
            result = build(args.folder, vocab, args.entities, args.dims)
        else:
            result = load(args.folder, args.hidden, args.entities)
        print(json.dumps(result))
        return
    if args.smoke:
        args.work, args.entities, args.dims, args.repeats = smoke_folder(), 2_001, 16, 1
        args.baseline, args.out = args.baseline or "HEAD", None
    args.work.mkdir(parents=True, exist_ok=True)
    for old in args.work.glob("hidden-*.pt"):
        old.unlink()
    make_vocab(args.work / f"vocab-{args.entities}.sqlite", args.entities)
    codes: dict[str, Path | None] = {"ours": None}
    if args.baseline:
        codes[args.baseline] = export_code(args.baseline, args.work)
    common = ["--work", str(args.work), "--entities", str(args.entities), "--dims", str(args.dims)]
    runs: list[dict] = []
    for _ in range(args.repeats):
        for label, code in codes.items():
            folder = args.work / f"model-{label}"
            run = {"code": label, "step": "build"} | child("build", code, [*common, "--folder", str(folder)])
            runs.append(run)
            print(json.dumps(run), flush=True)
        loads = [(label, label, code) for label, code in codes.items()]
        if args.baseline:
            loads.append((args.baseline, "ours", None))  # this code reading the folder the baseline wrote
        for written_by, label, code in loads:
            hidden = args.work / f"hidden-{written_by}-{label}.pt"
            folder = args.work / f"model-{written_by}"
            measured = child("load", code, [*common, "--folder", str(folder), "--hidden", str(hidden)])
            run = {"code": label, "step": "load", "folder_of": written_by} | measured
            runs.append(run)
            print(json.dumps(run), flush=True)
    check_equal(args.work)
    table_mb = args.entities * args.dims * 4 / 2**20
    print(f"\nentity table: {args.entities:,} x {args.dims} float32 = {table_mb:,.0f} MB")
    print("\n| code | step | folder of | RSS added (MB) | x table | peak RSS (MB) | files (MB) |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in runs:
        added = r.get("from_encoder_adds_mb", r.get("from_pretrained_adds_mb"))
        files = ", ".join(f"{k} {v / 2**20:,.1f}" for k, v in r.get("files", {}).items())
        print(
            f"| {r['code']} | {r['step']} | {r.get('folder_of', '')} | {added:,.0f} | {added / table_mb:.2f} | "
            f"{r['peak_rss_mb']:,.0f} | {files} |"
        )
    if args.out:
        info = {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "table": {"entities": args.entities, "dims": args.dims, "mb": round(table_mb, 1)},
            "command": "python benchmarks/knowbert_memory.py" + (f" --baseline {args.baseline}" * bool(args.baseline)),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**info, "runs": runs}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


def check_equal(work: Path) -> None:
    """Every load's hidden states are the same (the same seeds build the same weights in every code)."""
    import torch

    found = {p.name: torch.load(p, weights_only=True) for p in sorted(work.glob("hidden-*.pt"))}
    first = next(iter(found.values()))
    unequal = [name for name, h in found.items() if not torch.equal(h, first)]
    if unequal:
        raise SystemExit(f"hidden states differ: {unequal} vs {next(iter(found))}")
    print(f"hidden states equal across {len(found)} loads: {', '.join(found)}")


if __name__ == "__main__":
    main()
