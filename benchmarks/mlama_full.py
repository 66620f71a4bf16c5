"""mLAMA at its real size: generate a folder with mLAMA 1.1's layout and counts, time ``mluke eval-mlama`` on a
stated subset in entity and word mode, profile where the time goes, and project a full run.

The generated folder (``<work>/mlama``) has mLAMA's layout (``mlama1.1/<lang>/templates.jsonl``,
``mlama1.1/<lang>/<relation>.jsonl``, ``TREx_multilingual_objects/<lang>.json``, see :mod:`probes.mlama`) and
counts: the 24 mLUKE languages, the 41 T-REx relations, ``--facts`` (1,000) facts per relation and language,
and per relation a candidate set of mLAMA's size class (7 continents to ~1,000 cities). Subjects and objects are
entities of the random checkpoint's vocabulary (``Q4`` ... ``Q1200000``) named like the world kb of
``benchmarks/full_scale.py`` in each language's script; 10% of the objects have QIDs outside the vocabulary
(scored with word masks, as real candidates missing from the vocabulary are).

Each measured run is ``mluke eval-mlama`` in a fresh process (``--langs`` the subset's languages, ``--relations``
all 41, the facts files cut to ``--subset-facts`` per relation) under ``cProfile`` (where the time goes: loading,
reading the folder, tokenization, the encoder, candidate scoring); ``--plain`` also times it without the profiler.
The time per fact is the time inside ``run_cloze`` (everything done per relation: prompts, tokenization, forward
passes, scoring) over the subset's facts; the projection multiplies it by the folder's facts.

    python benchmarks/mlama_full.py [--work /work/bench-shared/world] [--model /work/bench-shared/mluke-base-random]
        [--subset-langs en,ja] [--subset-facts 10] [--smoke]

``--smoke``: 2 languages, 3 relations, 5 facts, the smoke checkpoint, in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import add_smoke, cpu_seconds, make_checkpoint, smoke_folder
from full_scale import LANG_WEIGHTS, Names, render

#: mLAMA's 41 T-REx relations, each with an English template and a candidate set size of its class
RELATIONS: dict[str, tuple[str, int]] = {
    "P17": ("[X] is located in [Y] .", 180),
    "P19": ("[X] was born in [Y] .", 900),
    "P20": ("[X] died in [Y] .", 800),
    "P27": ("[X] is [Y] citizen .", 150),
    "P30": ("[X] is located in [Y] .", 7),
    "P31": ("[X] is a [Y] .", 120),
    "P36": ("The capital of [X] is [Y] .", 450),
    "P37": ("The official language of [X] is [Y] .", 70),
    "P39": ("[X] has the position of [Y] .", 50),
    "P47": ("[X] shares border with [Y] .", 400),
    "P101": ("[X] works in the field of [Y] .", 250),
    "P103": ("The native language of [X] is [Y] .", 40),
    "P106": ("[X] is a [Y] by profession .", 60),
    "P108": ("[X] works for [Y] .", 300),
    "P127": ("[X] is owned by [Y] .", 350),
    "P131": ("[X] is located in [Y] .", 1000),
    "P136": ("[X] plays [Y] music .", 60),
    "P138": ("[X] is named after [Y] .", 600),
    "P140": ("[X] is affiliated with the [Y] religion .", 20),
    "P159": ("The headquarter of [X] is in [Y] .", 400),
    "P176": ("[X] is produced by [Y] .", 200),
    "P178": ("[X] is developed by [Y] .", 250),
    "P190": ("[X] and [Y] are twin cities .", 800),
    "P264": ("[X] is represented by music label [Y] .", 350),
    "P276": ("[X] is located in [Y] .", 500),
    "P279": ("[X] is a subclass of [Y] .", 700),
    "P361": ("[X] is part of [Y] .", 650),
    "P364": ("The original language of [X] is [Y] .", 60),
    "P407": ("[X] was written in [Y] .", 40),
    "P413": ("[X] plays in [Y] position .", 20),
    "P449": ("[X] was originally aired on [Y] .", 200),
    "P463": ("[X] is a member of [Y] .", 150),
    "P495": ("[X] was created in [Y] .", 100),
    "P527": ("[X] consists of [Y] .", 600),
    "P530": ("[X] maintains diplomatic relations with [Y] .", 200),
    "P740": ("[X] was founded in [Y] .", 700),
    "P937": ("[X] used to work in [Y] .", 400),
    "P1001": ("[X] is a legal term in [Y] .", 100),
    "P1303": ("[X] plays [Y] .", 60),
    "P1376": ("[X] is the capital of [Y] .", 250),
    "P1412": ("[X] used to communicate in [Y] .", 80),
}
N_ENTITIES = 1_200_000


def label(lang: str, rank: int, names: Names) -> str:
    """The name of entity rank ``rank`` in ``lang`` (the world kb's full name)."""
    sep = "" if lang in ("ja", "zh", "th") else " "
    return render(lang, names.given(rank)) + sep + render(lang, names.family(rank))


def generate(root: Path, langs: list[str], relations: dict[str, tuple[str, int]], facts: int, seed: int) -> dict:
    """Write the mLAMA folder (see the module docs); returns its counts."""
    names = Names(N_ENTITIES, seed)
    rng = random.Random(seed)
    # per relation: candidate ranks (popular entities; 10% outside the vocabulary), subjects
    cands = {
        r: [rng.randrange(0, 50_000) if rng.random() < 0.9 else N_ENTITIES + rng.randrange(10**6) for _ in range(n)]
        for r, (_, n) in relations.items()
    }
    subjects = {r: rng.sample(range(N_ENTITIES - 4), facts) for r in relations}
    gold = {r: [rng.choice(cands[r]) for _ in range(facts)] for r in relations}
    t = time.perf_counter()
    n_facts = 0
    for lang in langs:
        folder = root / "mlama1.1" / lang
        folder.mkdir(parents=True, exist_ok=True)
        rows = [{"relation": r, "template": tpl} for r, (tpl, _) in relations.items()]
        (folder / "templates.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
        objects = {}
        for r in relations:
            with (folder / f"{r}.jsonl").open("w", encoding="utf-8") as f:
                for i, (s, o) in enumerate(zip(subjects[r], gold[r])):
                    fact = {
                        "sub_uri": f"Q{s + 4}",
                        "sub_label": label(lang, s, names),
                        "obj_uri": f"Q{o + 4}",
                        "obj_label": label(lang, o, names),
                        "lineid": i,
                    }
                    f.write(json.dumps(fact, ensure_ascii=False) + "\n")
                    n_facts += 1
            objects[r] = {"objects": sorted({label(lang, o, names) for o in cands[r]})}
        objs = root / "TREx_multilingual_objects" / f"{lang}.json"
        objs.parent.mkdir(parents=True, exist_ok=True)
        objs.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {
        "languages": len(langs),
        "relations": len(relations),
        "facts": n_facts,
        "candidates_per_relation_mean": round(sum(n for _, n in relations.values()) / len(relations)),
        "seconds": round(time.perf_counter() - t, 1),
        "mib": round(size / 2**20, 1),
    }


def subset(root: Path, out: Path, langs: list[str], facts: int) -> None:
    """A copy of ``root`` with ``langs`` and the first ``facts`` facts of each relation (all candidates)."""
    for lang in langs:
        src, dst = root / "mlama1.1" / lang, out / "mlama1.1" / lang
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.iterdir():
            lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
            (dst / f.name).write_text("".join(lines if f.name == "templates.jsonl" else lines[:facts]), "utf-8")
        objs = out / "TREx_multilingual_objects"
        objs.mkdir(parents=True, exist_ok=True)
        (objs / f"{lang}.json").write_bytes((root / "TREx_multilingual_objects" / f"{lang}.json").read_bytes())


PROFILED = """
import cProfile, sys
out = sys.argv.pop(1)
sys.argv = ["mluke", *sys.argv[1:]]
from mluke.cli import main
prof = cProfile.Profile()
code = 0
try:
    prof.runcall(main)
except SystemExit as exc:
    code = exc.code
finally:
    prof.dump_stats(out)
sys.exit(code)
"""
PLAIN = "import sys\nsys.argv = ['mluke', *sys.argv[1:]]\nfrom mluke.cli import main\nmain()\n"

#: where the time goes: (category, substrings of "file:function" whose cumulative time is the category's)
CATEGORIES = [
    ("import and model load", ("mluke/knowbert/word_model.py:open_probe_model",)),
    ("read the mLAMA folder", ("probes/mlama.py:read_mlama",)),
    ("run_cloze (everything per relation)", ("mluke/probing/runs.py:run_cloze",)),
    ("encoder forward (torch modules)", ("modeling_luke.py:forward",)),
    ("tokenization", ("tokenization_utils", "tokenizers", "_batch_encode_plus", "tokenization_mluke")),
]


def profile_summary(path: Path) -> dict:
    """Cumulative seconds of the categories of :data:`CATEGORIES` and the top functions by own time."""
    stats = pstats.Stats(str(path))
    raw = stats.stats  # type: ignore[attr-defined]
    total = max(ct for (_, _, _, ct, _) in raw.values())  # (calls, primitive calls, own, cumulative, callers)
    cats = {}
    for name, needles in CATEGORIES:
        best = 0.0
        for (file, _, func), (_, _, _, ct, _) in raw.items():
            key = f"{file}:{func}"
            if any(n in key for n in needles):
                best = max(best, ct)  # the outermost matching call (cumulative times nest)
        cats[name] = round(best, 1)
    top = sorted(raw.items(), key=lambda kv: -kv[1][2])[:12]
    own = [{"function": f"{Path(f).name}:{ln}:{fn}", "own_s": round(v[2], 2)} for (f, ln, fn), v in top]
    return {"total_s": round(total, 1), "categories_s": cats, "top_own_time": own}


def run_eval(argv: list[str], profile: Path | None) -> tuple[float, float]:
    """Run ``mluke eval-mlama`` with ``argv`` in a fresh process: its wall and CPU seconds (user + system; what
    the work costs whatever share of the cores other jobs leave it)."""
    code, extra = (PROFILED, [str(profile)]) if profile else (PLAIN, [])
    before = cpu_seconds(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *extra, *argv], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"mluke {' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return wall, cpu_seconds(resource.RUSAGE_CHILDREN) - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work" / "world")
    ap.add_argument("--model", type=Path, default=Path(__file__).parent / "work" / "mluke-base-random")
    ap.add_argument("--facts", type=int, default=1000, help="facts per relation and language in the folder")
    ap.add_argument("--subset-langs", default="en,ja")
    ap.add_argument("--subset-facts", type=int, default=10)
    ap.add_argument("--modes", default="entity,word")
    ap.add_argument("--plain", action="store_true", help="also time each mode without the profiler")
    ap.add_argument("--seed", type=int, default=0)
    add_smoke(ap)
    args = ap.parse_args()
    relations = RELATIONS
    langs = list(LANG_WEIGHTS)
    if args.smoke:
        args.work, args.facts, args.subset_facts = smoke_folder(), 20, 5
        args.model = args.work / "model"
        make_checkpoint(args.model, smoke=True)
        relations = {r: (t, min(n, 30)) for r, (t, n) in list(RELATIONS.items())[:3]}
        langs = ["en", "ja"]
    root = args.work / "mlama"
    results_path = args.work / "mlama-results.json"
    results: dict = json.loads(results_path.read_text()) if results_path.exists() else {}
    if not (root / "mlama1.1").is_dir() or "folder" not in results or args.smoke:  # seeded: the same files
        results["folder"] = generate(root, langs, relations, args.facts, args.seed)
        print(json.dumps({"folder": results["folder"]}), flush=True)
    sub_langs = args.subset_langs.split(",")
    full_facts = results["folder"]["facts"]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "mlama"
        subset(root, sub, sub_langs, args.subset_facts)
        n_sub = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in (sub / "mlama1.1").rglob("P*.jsonl"))
        env_threads = os.environ.get("OMP_NUM_THREADS", "default")
        for mode in args.modes.split(","):
            argv = ["eval-mlama", str(sub), "--model", str(args.model), "--langs", args.subset_langs]
            argv += ["--mode", mode, "--no-progress", "--json", str(Path(tmp) / f"{mode}.json"), "--overwrite"]
            run: dict = {"facts": n_sub, "threads": env_threads, "command": "mluke " + " ".join(argv)}
            if args.plain:
                wall, cpu = run_eval(argv, None)
                run["wall_s"], run["cpu_s"] = round(wall, 1), round(cpu, 1)
            prof = Path(tmp) / f"{mode}.prof"
            wall, cpu = run_eval(argv, prof)
            run["profiled_wall_s"], run["profiled_cpu_s"] = round(wall, 1), round(cpu, 1)
            run["profile"] = profile_summary(prof)
            cloze = run["profile"]["categories_s"]["run_cloze (everything per relation)"]
            per_fact = cloze / n_sub
            run["per_fact_s"] = round(per_fact, 4)
            run["projected_full_h"] = round(per_fact * full_facts / 3600, 1)
            # CPU per fact: the process's CPU seconds times run_cloze's share of its profiled wall time
            share = min(1.0, cloze / wall) if wall else 0.0
            run["per_fact_cpu_s"] = round(cpu * share / n_sub, 4)
            run["projected_full_cpu_h"] = round(cpu * share / n_sub * full_facts / 3600, 1)
            runs[mode] = run
            print(json.dumps({mode: run}), flush=True)
    results[f"subset {args.subset_langs} x {len(relations)} relations x {args.subset_facts} facts"] = runs
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
