"""The figures of a GPU machine (run by ``benchmarks/gpu_check.sh``), at the mluke-base shape with random weights:

- ``peak``: the card's bf16 matrix-product rate, measured (8192 x 8192 x 8192, mean of 10 after 3 warm-ups);
- ``encoder``: the encoder's forward at 32 windows of 512 pieces and 32 entities, fp32 and bf16: time, FLOPs
  (counted by ``torch.utils.flop_counter``) and the share of the measured and of the nominal bf16 peak;
- ``probe``: cloze scoring (``encode_entities`` + ``entity_scores``, normalised over the 1.2M entities, 100
  candidates, prompts of 16 pieces) against the bare ``encode_entities`` on the same batches, fp32 and bf16;
- ``link``: ``Linker.link`` over generated English texts (a kb of generated names over the checkpoint's
  entities) against the bare encoder replaying the very windows the linker encoded, fp32 and bf16, and the
  share of mentions linked to the same entity in bf16 as in fp32;
- ``faiss``: exact top-10 inner-product search, 200,000 x 768 vectors and 500 queries: faiss-cpu
  (``IndexFlatIP``, all the machine's cores) against a matrix product and ``topk`` on the GPU, same ids checked.

Every part is timed with the GPU synchronised; the JSON is rewritten after each part, so a run cut short keeps
what it measured.

    python benchmarks/gpu_figures.py --out FILE.json [--parts peak,encoder,probe,link,faiss] [--work DIR]
    python benchmarks/gpu_figures.py --smoke     # seconds, on the CPU when no GPU is here, tiny shapes
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from common import add_smoke, checkpoint_entities, make_checkpoint, smoke_folder, world_kb, world_texts

PARTS = ("peak", "encoder", "probe", "link", "faiss")
#: dense bf16 tensor-core peak of the cards this project is lent (vendor data sheets, SXM parts, no sparsity)
NOMINAL_BF16_TFLOPS = {"H100": 989.4, "H200": 989.4}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device, repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def card(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info |= {"gpu": props.name, "memory_gib": round(props.total_memory / 2**30, 1)}
        info["sms"] = props.multi_processor_count
        info["nominal_bf16_tflops"] = next((v for k, v in NOMINAL_BF16_TFLOPS.items() if k in props.name), None)
    else:
        info["gpu"] = None
    return info


def peak(device: torch.device, smoke: bool) -> dict[str, Any]:
    n = 512 if smoke else 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    t = time.perf_counter()
    for _ in range(10):
        a @ b
    sync(device)
    seconds = (time.perf_counter() - t) / 10
    return {"n": n, "seconds": seconds, "tflops": 2 * n**3 / seconds / 1e12}


def load_model(folder: Path, device: torch.device, dtype: str | None) -> Any:
    import mluke

    model = mluke.load(folder).model
    from mluke.models.devices import place

    return place(model, device, dtype).eval()


def encoder(folder: Path, device: torch.device, smoke: bool, measured_peak: float | None, nominal: float | None):
    from torch.utils.flop_counter import FlopCounterMode

    batch, words, ents = (4, 64, 8) if smoke else (32, 512, 32)
    g = torch.Generator().manual_seed(0)
    inputs = {
        "input_ids": torch.randint(5, 250_000, (batch, words), generator=g),
        "attention_mask": torch.ones(batch, words, dtype=torch.long),
        "entity_ids": torch.randint(4, checkpoint_entities(folder), (batch, ents), generator=g),
        "entity_attention_mask": torch.ones(batch, ents, dtype=torch.long),
        "entity_position_ids": torch.randint(1, words - 1, (batch, ents, 30), generator=g),
    }
    inputs = {k: v.to(device) for k, v in inputs.items()}
    out: dict[str, Any] = {"batch": batch, "words": words, "entities": ents}
    for dtype in (None, "bf16"):
        model = load_model(folder, device, dtype)
        with torch.inference_mode():
            counter = FlopCounterMode(display=False)
            with counter:
                model.encode(**inputs)
            flops = counter.get_total_flops()
            seconds = timed(lambda m=model: m.encode(**inputs), device, 3 if smoke else 10)
        name = dtype or "fp32"
        rate = flops / seconds / 1e12
        out[name] = {
            "seconds": seconds,
            "tflop": flops / 1e12,
            "tflops": rate,
            "tokens_per_s": batch * (words + ents) / seconds,
            "share_of_measured_bf16_peak": rate / measured_peak if measured_peak else None,
            "share_of_nominal_bf16_peak": rate / nominal if nominal else None,
        }
        print(f"encoder {name}: {seconds * 1e3:.1f} ms, {rate:.1f} TFLOP/s", flush=True)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


def probe(folder: Path, device: torch.device, smoke: bool) -> dict[str, Any]:
    """Normalised cloze scores of 100 candidates against the bare encoder on the same batches."""
    n_prompts, batch, seq = (64, 32, 16) if smoke else (4096, 256, 16)
    n_entities = checkpoint_entities(folder)
    g = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(n_prompts // batch):
        ids = torch.randint(5, 250_000, (batch, seq), generator=g)
        ids[:, 0], ids[:, -1], ids[:, 8] = 0, 2, 250_001
        pos = torch.full((batch, 1, 30), -1)
        pos[:, 0, 0] = 8
        inputs = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "entity_ids": torch.full((batch, 1), 2),  # the [MASK] entity
            "entity_attention_mask": torch.ones(batch, 1, dtype=torch.long),
            "entity_position_ids": pos,
        }
        cands = torch.randint(4, n_entities, (batch, 100), generator=g)
        batches.append(({k: v.to(device) for k, v in inputs.items()}, cands.to(device)))
    out: dict[str, Any] = {"prompts": n_prompts, "batch": batch, "candidates": 100}
    tops = {}
    for dtype in (None, "bf16"):
        model = load_model(folder, device, dtype)
        name = dtype or "fp32"
        with torch.inference_mode():

            def scored(m: Any = model) -> list[torch.Tensor]:
                return [m.entity_scores(m.encode_entities(**i)[:, 0], c) for i, c in batches]

            def bare(m: Any = model) -> list[torch.Tensor]:
                return [m.encode_entities(**i) for i, _ in batches]

            t_ours = timed(scored, device, 3)
            t_bare = timed(bare, device, 3)
            tops[name] = torch.cat([s.argmax(-1) for s in scored()]).cpu()
        out[name] = {
            "prompts_per_s": n_prompts / t_ours,
            "encoder_prompts_per_s": n_prompts / t_bare,
            "x_encoder": t_ours / t_bare,
        }
        print(f"probe {name}: {n_prompts / t_ours:,.0f} prompts/s, {t_ours / t_bare:.2f}x the encoder", flush=True)
        del model
    out["bf16_same_top1"] = float((tops["fp32"] == tops["bf16"]).float().mean())
    return out


def link(folder: Path, work: Path, device: torch.device, smoke: bool) -> dict[str, Any]:
    from mluke.linking.linker import Linker

    n_entities, n_texts = (1_000, 8) if smoke else (50_000, 400)
    db_path = work / "gpu-world.sqlite"
    if db_path.exists():
        db_path.unlink()
    t = time.perf_counter()
    names = world_kb(db_path, n_entities)
    texts = world_texts(names, n_texts)
    out: dict[str, Any] = {"texts": n_texts, "kb_entities": n_entities, "kb_build_s": time.perf_counter() - t}
    keys = {}
    for dtype in (None, "bf16"):
        name = dtype or "fp32"
        linker = Linker(folder, db_path, device=device.type, dtype=dtype)
        model = linker.bundle.model
        recorded: list[dict[str, torch.Tensor]] = []
        original = model.encode_entities

        def recording(**inputs: torch.Tensor) -> torch.Tensor:
            recorded.append({k: v.detach().clone() for k, v in inputs.items()})
            return original(**inputs)

        linker.link(texts[:2], "en")  # warm-up: kernels, the mention index, caches
        model.encode_entities = recording  # type: ignore[method-assign]
        sync(device)
        t = time.perf_counter()
        linked = linker.link(texts, "en")
        sync(device)
        t_link = time.perf_counter() - t
        model.encode_entities = original  # type: ignore[method-assign]
        with torch.inference_mode():
            t_bare = timed(lambda: [original(**i) for i in recorded], device, 3)
        keys[name] = [m.key for doc in linked for m in doc]
        out[name] = {
            "texts_per_s": n_texts / t_link,
            "mentions": len(keys[name]),
            "encoder_calls": len(recorded),
            "link_s": t_link,
            "encoder_s": t_bare,
            "x_encoder": t_link / t_bare,
        }
        print(f"link {name}: {n_texts / t_link:.1f} texts/s, {t_link / t_bare:.2f}x the bare encoder", flush=True)
        del linker, model
    same = sum(a == b for a, b in zip(keys["fp32"], keys["bf16"]))
    out["bf16_same_entity"] = same / max(1, len(keys["fp32"]))
    return out


def faiss_part(device: torch.device, smoke: bool) -> dict[str, Any]:
    import faiss

    n, dim, queries = (2_000, 64, 50) if smoke else (200_000, 768, 500)
    rng = torch.Generator().manual_seed(2)
    xb = torch.nn.functional.normalize(torch.randn(n, dim, generator=rng), dim=1)
    xq = torch.nn.functional.normalize(torch.randn(queries, dim, generator=rng), dim=1)
    index = faiss.IndexFlatIP(dim)
    index.add(xb.numpy())
    t_cpu = timed(lambda: index.search(xq.numpy(), 10), torch.device("cpu"), 3)
    cpu_ids = torch.from_numpy(index.search(xq.numpy(), 10)[1])
    gb, gq = xb.to(device), xq.to(device)
    t_gpu = timed(lambda: (gq @ gb.T).topk(10, dim=1), device, 5)
    gpu_ids = (gq @ gb.T).topk(10, dim=1).indices.cpu()
    return {
        "vectors": n,
        "dim": dim,
        "queries": queries,
        "faiss_threads": faiss.omp_get_max_threads(),
        "faiss_cpu_queries_per_s": queries / t_cpu,
        "torch_gpu_queries_per_s": queries / t_gpu,
        "gpu_over_cpu": t_cpu / t_gpu,
        "same_ids": float((cpu_ids == gpu_ids).float().mean()),
        "faiss_gpus": faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "gpu_figures.json")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--work", type=Path, default=Path("/tmp/mluke-gpu-figures"))
    add_smoke(ap)
    args = ap.parse_args()
    parts = args.parts.split(",")
    if bad := [p for p in parts if p not in PARTS]:
        raise SystemExit(f"--parts: unknown {', '.join(bad)}; expected some of {', '.join(PARTS)}")
    if args.smoke:
        args.work = smoke_folder()
        args.out = args.work / "gpu_figures.json"
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu" and not args.smoke:
        raise SystemExit("no GPU here: gpu_figures.py measures a GPU (--smoke runs the code on the CPU)")
    torch.manual_seed(0)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": card(device), "smoke": args.smoke}

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))

    save()
    folder = args.work / ("checkpoint-smoke" if args.smoke else "mluke-base-random")
    if {"encoder", "probe", "link"} & set(parts) and not (folder / "model.safetensors").exists():
        t = time.perf_counter()
        make_checkpoint(folder, smoke=args.smoke, device=device.type)
        results["checkpoint_s"] = time.perf_counter() - t
        print(f"checkpoint written in {results['checkpoint_s']:.0f} s", flush=True)
    measured = None
    for part in parts:
        t = time.perf_counter()
        try:
            if part == "peak":
                results["peak"] = peak(device, args.smoke)
                measured = results["peak"]["tflops"]
            elif part == "encoder":
                nominal = results["machine"].get("nominal_bf16_tflops")
                results["encoder"] = encoder(folder, device, args.smoke, measured, nominal)
            elif part == "probe":
                results["probe"] = probe(folder, device, args.smoke)
            elif part == "link":
                results["link"] = link(folder, args.work, device, args.smoke)
            else:
                results["faiss"] = faiss_part(device, args.smoke)
        except Exception as exc:  # one part's failure is recorded; the others still run
            results[part] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"{part}: {type(exc).__name__}: {exc}", flush=True)
        results.setdefault("part_seconds", {})[part] = time.perf_counter() - t
        save()
        print(f"{part} done in {time.perf_counter() - t:.0f} s", flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
