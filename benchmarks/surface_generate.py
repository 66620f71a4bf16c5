"""Generate a synthetic entity database at real scale for the mention detection benchmark.

The database holds 6M distinct anchor surface forms (>= 5M distinct after folding and the 1% filter) over 1.2M
entities in one language (English Wikipedia has more than that), written through the ordinary
``kb.EntityDB.create`` writer: per surface, anchor counts to 1-10 entities (most
surfaces name one entity, a few are very ambiguous), its link statistics
(link probability spread over [0.5%, 90%], so a few percent fall under the 1%
default threshold), and a page title per entity. Also writes texts of 100 words
that mix common words, vocabulary words (some are surfaces on their own) and
inserted surfaces, plus punctuation.

    python benchmarks/surface_generate.py [--surfaces 6000000] [--entities 1200000] [--texts 2000] [--smoke]

``--smoke``: 2,000 surfaces over 500 entities and 10 texts, in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from common import add_smoke, smoke_folder

SYLLABLES = [
    "ka",
    "to",
    "ri",
    "men",
    "sur",
    "ban",
    "lo",
    "vi",
    "del",
    "mar",
    "san",
    "ber",
    "gen",
    "tal",
    "or",
    "us",
    "ne",
    "po",
    "qu",
    "zel",
    "fa",
    "ho",
    "mi",
    "ra",
    "dun",
    "el",
    "ost",
    "wyn",
]
COMMON = [
    "the",
    "of",
    "and",
    "in",
    "to",
    "a",
    "is",
    "was",
    "for",
    "on",
    "as",
    "with",
    "by",
    "that",
    "at",
    "from",
    "his",
    "her",
    "it",
    "an",
    "were",
    "which",
    "are",
    "this",
    "be",
    "also",
    "has",
    "had",
    "one",
    "their",
    "first",
    "after",
    "its",
    "new",
    "who",
    "they",
    "not",
    "but",
    "two",
    "have",
    "been",
    "other",
    "when",
    "there",
    "all",
    "during",
    "into",
    "school",
    "time",
    "may",
    "years",
    "more",
    "most",
    "only",
    "over",
    "city",
    "some",
    "world",
    "would",
    "where",
    "later",
    "up",
    "such",
    "used",
    "many",
    "can",
    "state",
    "about",
    "national",
    "out",
    "known",
    "university",
    "united",
    "then",
    "made",
]


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def generate(path: Path, texts_path: Path, n_surfaces: int, n_entities: int, n_texts: int, seed: int = 0) -> dict:
    import kb

    rng = random.Random(seed)
    vocab = vocabulary(rng, 250_000)
    surfaces: dict[str, None] = {}
    while len(surfaces) < n_surfaces:
        k = rng.choice((1, 2, 2, 2, 3, 3, 4))
        words = [rng.choice(vocab) for _ in range(k)]
        if rng.random() < 0.05:
            words.insert(rng.randrange(k + 1), rng.choice(("of", "the", "and", "de")))
        surfaces[" ".join(w.capitalize() if rng.random() < 0.8 else w for w in words)] = None
    names = list(surfaces)
    rng.shuffle(names)
    anchors = 0
    t = time.perf_counter()
    provenance = {
        "builder": "benchmarks/surface_generate.py",
        "seed": seed,
        "surfaces": n_surfaces,
        "entities": n_entities,
    }
    with kb.EntityDB.create(path, overwrite=True, provenance=provenance) as w:
        w.add_languages(["en"])
        for i, surface in enumerate(names):
            # Every entity gets its first surface as page title; later surfaces pick entities at random.
            first = i < n_entities
            k = 1 if first or rng.random() < 0.7 else min(10, int(rng.paretovariate(1.2)) + 1)
            entities = {i} if first else set()
            while len(entities) < k:
                entities.add(rng.randrange(n_entities))
            link_docs = 0
            for e in sorted(entities):
                count = int(rng.paretovariate(1.1) * 3)
                w.add_anchor("en", surface, f"Q{e + 1}", count)
                link_docs += count
                anchors += 1
            lp = 0.005 + rng.random() ** 2 * 0.9
            w.add_surface("en", surface, link_docs=link_docs, text_docs=max(link_docs, int(link_docs / lp)))
            if first:
                w.add_entity(f"Q{i + 1}", "synthetic")
                w.add_title("en", surface, f"Q{i + 1}")
        w.add_source("generator", "benchmarks/surface_generate.py", lang="en", seed=seed)
    build_s = time.perf_counter() - t

    texts = []
    popular = names[: n_surfaces // 5]  # surfaces that texts mention (a Zipf-like head)
    for _ in range(n_texts):
        words: list[str] = []
        while len(words) < 100:
            r = rng.random()
            if r < 0.12:
                words += rng.choice(popular).split()
            elif r < 0.35:
                words.append(rng.choice(vocab))
            else:
                words.append(rng.choice(COMMON))
            if rng.random() < 0.06:
                words[-1] += rng.choice((",", ".", ";", ")"))
        texts.append(" ".join(words[:100]).capitalize() + ".")
    texts_path.write_text(json.dumps(texts), encoding="utf-8")
    return {
        "surfaces": n_surfaces,
        "entities": n_entities,
        "anchor_rows": anchors,
        "texts": n_texts,
        "db_mib": round(path.stat().st_size / 2**20),
        "write_s": round(build_s, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--surfaces", type=int, default=6_000_000)
    ap.add_argument("--entities", type=int, default=1_200_000)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work")
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.work, args.surfaces, args.entities, args.texts = smoke_folder(), 2000, 500, 10
    args.work.mkdir(parents=True, exist_ok=True)
    out = generate(
        args.work / f"surfaces_{args.surfaces}.sqlite",
        args.work / f"texts_{args.surfaces}.json",
        args.surfaces,
        args.entities,
        args.texts,
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
