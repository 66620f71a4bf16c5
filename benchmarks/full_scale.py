"""Generate a full-size world (a kb of 1.2M entities named in the 24 mLUKE languages, its mention index, a news
corpus that mentions its entities) and measure what each piece costs on this machine.

The kb's keys are ``Q4`` ... ``Q1200000``: the entity vocabulary of the random mluke-base-shaped checkpoint
(:func:`common.make_checkpoint`), so that ``mluke link --model <checkpoint> --db <world>/kb.sqlite`` links with
the full entity embedding table. The kb is written the way ``kb.build_from_dumps`` assembles one (the schema's
tables without secondary indexes, rows inserted in primary-key order in one transaction, then the indexes and the
statistics of :class:`kb.db.writer.EntityDBWriter`).

What the world holds (seeded, deterministic):

- entity ``Q(4 + r)`` has popularity rank ``r``; it is named in 3 to 24 languages (popular entities in more),
  drawn by each language's Wikipedia size; names are made of syllables rendered in the language's script
  (Latin, Cyrillic, Greek, Arabic, Devanagari, Bengali, Telugu, Thai, kana, Hangul, CJK);
- per entity and language: a page title (unique; a name shared with a more popular entity gets a qualifier,
  ``Name (Qualifier)``), a label, aliases, and anchor surfaces (the full name, the shared short name, the
  family name alone, an initial and family name) with Zipfian link counts by rank, so that a short name is
  ambiguous between many entities with very different priors;
- surface statistics (documents where a surface is a link / occurs at all): link probabilities in [0.2%, 90%];
- incoming link counts per entity and language (what ranks an entity vocabulary);
- the mention index of each corpus language, as ``mluke link --lang L`` builds it
  (:meth:`kb.mentions.MentionIndex.for_db`, cached under ``<work>/home``: set ``MLUKE_HOME`` to it to reuse);
- ``corpus.jsonl`` (``{"id", "lang", "text"}``) of news-sized documents (200-400 words; characters for ja and
  zh) mentioning the kb's entities, and ``corpus/<lang>.txt`` (one document per line, ``mluke link``'s input).

Measured: time and disk of each piece, the kb's open time (cold: its pages dropped from the OS cache with
``posix_fadvise``; warm: opened again), and the peak RSS (``VmHWM`` of the child process) of ``mluke link`` over
100 documents with the world kb and the checkpoint.

    python benchmarks/full_scale.py [--work /work/bench-shared/world] [--model /work/bench-shared/mluke-base-random]
        [--entities 1200000] [--docs 1200] [--skip-link] [--smoke]

``--smoke``: 2,000 entities in 4 languages, 12 documents, the smoke checkpoint, in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import add_smoke, make_checkpoint, smoke_folder

#: the 24 mLUKE languages and a weight of each one's Wikipedia (articles, relative to English)
LANG_WEIGHTS = {
    "en": 1.0,
    "de": 0.45,
    "fr": 0.42,
    "es": 0.31,
    "it": 0.30,
    "ru": 0.33,
    "ja": 0.23,
    "nl": 0.35,
    "pl": 0.26,
    "pt": 0.19,
    "sv": 0.40,
    "zh": 0.23,
    "vi": 0.22,
    "ar": 0.20,
    "fi": 0.09,
    "id": 0.11,
    "ko": 0.10,
    "tr": 0.09,
    "el": 0.04,
    "hi": 0.03,
    "bn": 0.03,
    "th": 0.03,
    "te": 0.02,
    "sw": 0.015,
}
#: the corpus languages and their share of the documents
CORPUS_LANGS = ("en", "de", "fr", "es", "ru", "ja", "zh", "ar", "hi", "sw")

SYLLABLES = [c + v for c in "kmtrsnbldgpvhz" for v in "aeiou"]  # 70 latin syllables
LATIN_SUFFIX = {"de": "", "fr": "e", "es": "o", "it": "i", "pt": "o", "pl": "a", "fi": "nen", "sv": "", "nl": ""}
#: per non-Latin script: consonants and vowels that render a syllable (or one character per syllable)
SCRIPTS: dict[str, tuple[str, str] | str] = {
    "ru": ("кмтрснблдгпвхз", "аеиоу"),
    "el": ("κμτρσνβλδγπφχζ", "αειου"),
    "ar": ("كمترسنبلدجفوهز", "اويىة"),
    "hi": ("कमतरसनबलदगपवहज", "ािीुे"),
    "bn": ("কমতরসনবলদগপভহজ", "ািীুে"),
    "te": ("కమతరసనబలదగపవహజ", "ాిీుె"),
    "th": ("กมตรสนบลดคปวหซ", "าิีุเ"),
    "ja": "".join(chr(0x30A2 + 2 * i) for i in range(35)) + "".join(chr(0x30CA + i) for i in range(35)),
    "ko": "".join(chr(0xAC00 + 28 * 21 * (i // 5) + 28 * (i % 5) * 4) for i in range(70)),
    "zh": "".join(chr(0x4E00 + 97 * i) for i in range(70)),
}
QUALIFIERS = {
    "en": ["film", "river", "album", "town", "footballer", "band", "novel", "ship", "politician", "mountain"],
    "de": ["Film", "Fluss", "Album", "Stadt", "Fußballspieler", "Band", "Roman", "Schiff", "Politiker", "Berg"],
    "fr": ["film", "rivière", "album", "ville", "footballeur", "groupe", "roman", "navire", "homme politique"],
    "es": ["película", "río", "álbum", "ciudad", "futbolista", "banda", "novela", "barco", "político"],
}
FILLER = {
    "en": "the of and in to a was for on as with by that at from his her it an were which are this be also has had "
    "one their first after its new who they not but two have been other when there all during into years more "
    "city said government year people president minister team season police report week according officials",
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus "
    "er hat dass sie nach wird bei einer um am sind noch wie einem über so zum war haben nur oder aber vor zur "
    "Stadt Regierung Jahr Präsident Minister Polizei Woche sagte",
    "fr": "de la le et les des en un du une que est pour qui dans par plus pas au sur ne se ce il sont avec ou son "
    "a été aux ses mais comme elle ville gouvernement année président ministre police semaine selon a déclaré",
    "es": "de la que el en y a los se del las un por con no una su para es al lo como más pero sus le ha me si "
    "sobre este ya entre cuando todo esta ciudad gobierno año presidente ministro policía semana según dijo",
    "ru": "и в не на я что он с по это к но как из у за от о так же для был она все его ее мы при год город "
    "правительство президент министр полиция неделя заявил сообщил",
    "ar": "في من على إلى أن عن مع هذا التي الذي كان بين قد ما لا كما بعد عام المدينة الحكومة الرئيس الوزير "
    "الشرطة الأسبوع وقال وفقا",
    "hi": "के में की है और से को का एक यह भी पर था कि हैं लिए ने कर गया साल शहर सरकार राष्ट्रपति मंत्री पुलिस सप्ताह कहा अनुसार",
    "sw": "na ya wa kwa katika ni la za kuwa hiyo huo pia mwaka mji serikali rais waziri polisi wiki alisema kwa "
    "mujibu wa",
    "ja": "の は が を に で と した です ます 年 月 日 市 政府 大統領 大臣 警察 週 によると 発表 した 氏 が "
    "述べた。 、",
    "zh": "的 是 在 了 和 有 为 这 中 年 月 日 市 政府 总统 部长 警方 本周 表示 据 报道 。 ，",
}


def render(lang: str, sylls: list[int]) -> str:
    """A word of these syllables in ``lang``'s script (Latin languages: a language-specific ending)."""
    script = SCRIPTS.get(lang)
    if script is None:
        word = "".join(SYLLABLES[s % len(SYLLABLES)] for s in sylls)
        return word.capitalize() + (LATIN_SUFFIX.get(lang, "") if sylls[0] % 5 == 0 else "")
    if isinstance(script, str):
        return "".join(script[s % len(script)] for s in sylls)
    cons, vows = script
    return "".join(cons[(s // 5) % len(cons)] + vows[s % 5] for s in sylls)


def syllables(x: int, n: int) -> list[int]:
    """``n`` syllable indexes encoding ``x`` (bijective for x < 70**n)."""
    out = []
    for _ in range(n):
        x, d = divmod(x, len(SYLLABLES))
        out.append(d)
    return out


class Names:
    """The deterministic names of entity rank ``r``: a given name from 4,900 and a family name from
    343,000 (so family names are shared by a few entities, given names by many), and, for 30% of the
    entities, a short name shared with a more popular entity (Zipfian: "Paris" names hundreds)."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.seed = seed

    def given(self, r: int) -> list[int]:
        # (given, family) is unique per rank: ranks with the same family name (r mod 343,000) differ in r // 343,000
        return syllables((r * 7919 + (r // 343000) * 1234 + self.seed) % 4900, 2)

    def family(self, r: int) -> list[int]:
        return syllables((r * 104729 + 17) % 343000, 3)

    def shared_with(self, r: int) -> int | None:
        """The more popular entity whose short name this one shares, or None."""
        h = (r * 2654435761 + self.seed) & 0xFFFFFFFF
        if r < 100 or h % 10 >= 3:
            return None
        u = (h >> 8) / 2**24  # uniform in [0, 1)
        return min(r - 1, int(math.exp(u * math.log(r))))  # log-uniform: popular names are shared most


def languages_of(n: int, seed: int) -> list[list[str]]:
    """Per entity rank, its languages: 3 to 24 (popular entities more), drawn by Wikipedia size (English
    is drawn like the others, so some entities have no English page)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    langs = list(LANG_WEIGHTS)
    logw = np.log(np.array([LANG_WEIGHTS[l] for l in langs]))
    out: list[list[str]] = []
    for start in range(0, n, 200_000):
        ranks = np.arange(start, min(n, start + 200_000))
        k = np.clip(3 + np.round(21 * (1 - (ranks / n) ** 0.2)), 3, 24).astype(int)
        keys = logw - np.log(-np.log(rng.random((len(ranks), len(langs)))))  # Gumbel top-k: weighted draw
        order = np.argsort(-keys, axis=1)
        out.extend([langs[j] for j in sorted(order[i, : k[i]])] for i in range(len(ranks)))
    return out


def links(r: int, lang: str, rng: random.Random) -> int:
    """Incoming links of entity rank ``r`` in ``lang`` (Zipfian by rank)."""
    return max(1, int(300_000 / (r + 20) ** 0.85 * LANG_WEIGHTS[lang] * rng.uniform(0.3, 1.7)))


def language_rows(lang: str, ents: list[int], names: Names, seed: int) -> dict[str, list[tuple]]:
    """The rows of one language: titles, names, anchors, surfaces, entity_links (each sorted by its key)."""
    rng = random.Random(f"{seed}-{lang}")
    quals = QUALIFIERS.get(lang)
    titles, label_rows, anchor_counts, entity_links = [], [], {}, []
    for r in ents:
        key = f"Q{r + 4}"
        given, family = render(lang, names.given(r)), render(lang, names.family(r))
        sep = "" if lang in ("ja", "zh", "th") else " "
        full = f"{given}{sep}{family}"
        other = names.shared_with(r)
        short = full
        if other is not None:
            short = render(lang, names.family(other))
            qual = rng.choice(quals) if quals and rng.random() < 0.5 else full
            title = f"{short} ({qual})"
        else:
            title = full
        titles.append((title, key))
        label_rows.append((short, key, "label"))
        if short != full:
            label_rows.append((full, key, "alias"))
        n = links(r, lang, rng)
        entity_links.append((key, n))
        # Anchor texts of the n links: the label most, then the full name, the family name, an initial form.
        parts = [(short, 0.6), (full, 0.25), (family, 0.1)]
        if sep:
            parts.append((f"{given[0]}. {family}", 0.05))
        for surface, share in parts:
            c = int(n * share * rng.uniform(0.5, 1.5))
            if c or share >= 0.1:  # every entity has its full and family name as anchors
                k = (surface, key)
                anchor_counts[k] = anchor_counts.get(k, 0) + max(1, c)
    per_surface: dict[str, int] = {}
    for (surface, _), c in anchor_counts.items():
        per_surface[surface] = per_surface.get(surface, 0) + c
    surfaces = []
    for surface, c in per_surface.items():
        lp = 0.002 + rng.random() ** 2 * 0.9
        surfaces.append((surface, c, max(c, int(c / lp))))
    titles.sort()
    dedup_titles, last = [], None
    for t in titles:
        if t[0] != last:
            dedup_titles.append(t)
            last = t[0]
    label_rows.sort()
    anchors = sorted((s, k, c) for (s, k), c in anchor_counts.items())
    surfaces.sort()
    entity_links.sort()
    return {
        "titles": dedup_titles,
        "names": label_rows,
        "anchors": anchors,
        "surfaces": surfaces,
        "entity_links": entity_links,
    }


def disk_mib(path: Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
    return path.stat().st_size / 2**20


#: the staging table of each kb table a worker writes (plain tables, rows in the kb table's key order)
STAGED = {
    "titles": "title, entity",
    "names": "name, entity, kind",
    "anchors": "surface, entity, count",
    "surfaces": "surface, link_docs, text_docs",
    "entity_links": "entity, count",
}


def stage_language(task: tuple[str, list[int], int, int, str]) -> tuple[str, str, dict[str, int], float]:
    """Worker: one language's rows (:func:`language_rows`) written to a staging SQLite file in key order."""
    import sqlite3

    lang, ents, n, seed, folder = task
    t = time.perf_counter()
    rows = language_rows(lang, ents, Names(n, seed), seed)
    path = Path(folder) / f"stage-{lang}.sqlite"
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    for table, cols in STAGED.items():
        conn.execute(f"CREATE TABLE {table}({cols})")
        marks = ", ".join("?" * len(cols.split(",")))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows[table])
    conn.commit()
    conn.close()
    return lang, str(path), {table: len(r) for table, r in rows.items()}, time.perf_counter() - t


def build_kb(path: Path, n: int, seed: int, workers: int = 3) -> dict:
    """Write the world kb (see the module docs); returns counts and seconds. ``workers`` processes generate the
    languages' rows into staging files; the main process copies each into the kb (``INSERT ... SELECT``)."""
    import multiprocessing

    from kb.db import schema
    from kb.db.sqlite import attach
    from kb.db.writer import EntityDBWriter

    t0 = time.perf_counter()
    langs_of = languages_of(n, seed)
    per_lang: dict[str, list[int]] = {lang: [] for lang in LANG_WEIGHTS}
    for r, langs in enumerate(langs_of):
        for lang in langs:
            per_lang[lang].append(r)
    del langs_of
    counts = {"entities": n, "titles": 0, "names": 0, "anchors": 0, "surfaces": 0, "entity_links": 0}
    provenance = {"builder": "benchmarks/full_scale.py", "seed": seed, "entities": n}
    tasks = [
        (lang, ents, n, seed, str(path.parent)) for lang, ents in sorted(per_lang.items(), key=lambda kv: -len(kv[1]))
    ]
    with schema.building(path, overwrite=True, provenance=provenance, tables=schema.TABLES) as conn:
        q = conn.execute
        q("PRAGMA cache_size = -1048576")  # 1 GiB: entity_links is inserted language by language
        q("PRAGMA temp_store = FILE")
        writer = EntityDBWriter(conn)
        writer.add_languages(LANG_WEIGHTS)
        conn.executemany("INSERT INTO entities(key, kind) VALUES (?, 'item')", ((k,) for k in sorted_keys(n)))
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for lang, staged, table_counts, gen in pool.imap_unordered(stage_language, tasks):
                t = time.perf_counter()
                attach(conn, staged, "st")
                q("INSERT INTO titles SELECT ?, title, entity FROM st.titles ORDER BY rowid", (lang,))
                q("INSERT OR IGNORE INTO names SELECT ?, name, entity, kind FROM st.names ORDER BY rowid", (lang,))
                q("INSERT INTO anchors SELECT ?, surface, entity, count FROM st.anchors ORDER BY rowid", (lang,))
                q(
                    "INSERT INTO surfaces SELECT ?, surface, link_docs, text_docs FROM st.surfaces ORDER BY rowid",
                    (lang,),
                )
                q("INSERT INTO entity_links SELECT entity, ?, count FROM st.entity_links ORDER BY rowid", (lang,))
                attach(conn, None, "st")
                Path(staged).unlink()
                for table, c in table_counts.items():
                    counts[table] += c
                print(
                    f"{lang}: {len(per_lang[lang]):,} entities, {table_counts['surfaces']:,} surfaces, "
                    f"{table_counts['anchors']:,} anchors (generated and staged in {gen:.0f} s, "
                    f"copied in {time.perf_counter() - t:.0f} s)",
                    flush=True,
                )
        t = time.perf_counter()
        for index in schema.INDEXES:
            q(index)
        writer.add_source("generator", "benchmarks/full_scale.py", seed=seed, entities=n)
        writer.finish()
        counts["index_and_stats_s"] = round(time.perf_counter() - t, 1)
    counts["seconds"] = round(time.perf_counter() - t0, 1)
    counts["mib"] = round(disk_mib(path))
    return counts


def sorted_keys(n: int) -> list[str]:
    return sorted(f"Q{r + 4}" for r in range(n))


def write_corpus(db_path: Path, work: Path, docs: int, seed: int) -> dict:
    """``corpus.jsonl`` and ``corpus/<lang>.txt``: documents that mention the kb's entities by their names in the
    kb (label or full name, both anchor surfaces), popular entities most (a Zipfian draw of ranks)."""
    import sqlite3

    t0 = time.perf_counter()
    rng = random.Random(seed)
    conn = sqlite3.connect(f"{Path(db_path).resolve().as_uri()}?mode=ro", uri=True)
    (work / "corpus").mkdir(exist_ok=True)
    out = (work / "corpus.jsonl").open("w", encoding="utf-8")
    files = {lang: (work / "corpus" / f"{lang}.txt").open("w", encoding="utf-8") for lang in CORPUS_LANGS}
    n_ents = conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
    mentions = 0
    for i in range(docs):
        lang = CORPUS_LANGS[i % len(CORPUS_LANGS)]
        filler = FILLER[lang].split()
        nospace = lang in ("ja", "zh")
        target = rng.randint(200, 400)
        words: list[str] = []
        while len(words) < target:
            if rng.random() < 0.07:
                r = int(rng.paretovariate(0.2)) - 1  # Zipfian: 60% of the mentions among the top 100
                if r >= n_ents:
                    r = rng.randrange(n_ents)
                row = conn.execute(  # the label and the full name: anchor surfaces, found by the entity index
                    "SELECT name FROM names WHERE entity = ? AND lang = ?", (f"Q{r + 4}", lang)
                ).fetchall()
                if row:
                    words.append(rng.choice(row)[0])
                    mentions += 1
                    continue
            words.append(rng.choice(filler))
            if not nospace and rng.random() < 0.07:
                words[-1] += rng.choice((",", ".", "."))
        text = ("" if nospace else " ").join(words)
        text = text[0].upper() + text[1:] + ("。" if nospace else ".")
        out.write(json.dumps({"id": f"doc{i:05d}", "lang": lang, "text": text}, ensure_ascii=False) + "\n")
        files[lang].write(text + "\n")
    out.close()
    for f in files.values():
        f.close()
    conn.close()
    return {
        "documents": docs,
        "mentions": mentions,
        "languages": list(CORPUS_LANGS),
        "seconds": round(time.perf_counter() - t0, 1),
        "mib": round(disk_mib(work / "corpus.jsonl") + disk_mib(work / "corpus"), 1),
    }


def drop_from_page_cache(path: Path) -> None:
    """Evict ``path``'s pages from the OS page cache (clean pages; no privileges needed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


OPEN_CHILD = """
import json, sys, time
t = time.perf_counter()
import kb
t_import = time.perf_counter() - t
t = time.perf_counter()
db = kb.EntityDB(sys.argv[1])
opened = time.perf_counter() - t
t = time.perf_counter()
n = len(db)
db.lookup("en", sys.argv[2])
first = time.perf_counter() - t
print(json.dumps({"import_s": t_import, "open_s": opened, "first_query_s": first, "entities": n}))
"""


def measure_open(db_path: Path) -> dict:
    """The kb's open time in a fresh process, cold (pages dropped from the OS cache) and warm (again)."""
    out = {}
    for state in ("cold", "warm"):
        if state == "cold":
            drop_from_page_cache(db_path)
        proc = subprocess.run(
            [sys.executable, "-c", OPEN_CHILD, str(db_path), "Kaka Mabeme"], capture_output=True, text=True, check=True
        )
        out[state] = {k: round(v, 4) if isinstance(v, float) else v for k, v in json.loads(proc.stdout).items()}
    return out


CLI_CHILD = "sys.argv = ['mluke', *sys.argv[1:]]\nfrom mluke.cli import main\nmain()\n"


def peak_rss_of(argv: list[str], env: dict[str, str]) -> dict:
    """Run the ``mluke`` CLI with ``argv`` in a child process: its wall seconds and VmHWM (MB)."""
    t = time.perf_counter()
    out = peak_rss_child(CLI_CHILD, argv, env, json_line=False)
    return {"seconds": round(time.perf_counter() - t, 1), "peak_rss_mb": out["peak_rss_mb"]}


def build_index(db_path: Path, home: Path, langs: tuple[str, ...]) -> dict:
    """Each corpus language's mention index, as ``mluke link --lang L`` builds it (cached in ``home``)."""
    env = {**os.environ, "MLUKE_HOME": str(home)}
    child = (
        "import sys, time, json, kb\nfrom kb.mentions import MentionIndex\nfrom pathlib import Path\n"
        "db = kb.EntityDB(sys.argv[1])\nout = {}\n"
        "for lang in sys.argv[2:]:\n"
        "    t = time.perf_counter()\n"
        "    idx = MentionIndex.for_db(db, languages=[lang])\n"
        "    out[lang] = {'seconds': round(time.perf_counter() - t, 1), 'mib': round(Path(idx.path).stat().st_size"
        " / 2**20, 1), 'surfaces': idx.stats()[lang]['surfaces']}\n"
        "print(json.dumps(out))\n"
    )
    out = {}
    for lang in langs:  # one process per language: its VmHWM is that language's build
        proc_out = peak_rss_child(child, [str(db_path), lang], env)
        out[lang] = {**proc_out["result"][lang], "peak_rss_mb": proc_out["peak_rss_mb"]}
        print(f"mention index {lang}: {out[lang]}", flush=True)
    return out


def peak_rss_child(code: str, args: list[str], env: dict[str, str], json_line: bool = True) -> dict:
    """Run Python ``code`` with ``args`` in a child: its last output line as JSON (if ``json_line``) and its
    VmHWM (MB, written by an exit hook)."""
    wrapped = (
        "import atexit, sys\nfrom pathlib import Path\n_rss = sys.argv.pop(1)\n"
        "def _hwm():\n    for l in Path('/proc/self/status').read_text().splitlines():\n"
        "        if l.startswith('VmHWM:'): Path(_rss).write_text(str(int(l.split()[1]) / 1024))\n"
        "atexit.register(_hwm)\n" + code
    )
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".rss") as f:
        proc = subprocess.run([sys.executable, "-c", wrapped, f.name, *args], env=env, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"{args}: failed\n{proc.stderr[-3000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1]) if json_line else None
        return {"result": result, "peak_rss_mb": round(float(Path(f.name).read_text()))}


README = """A full-size world for mluke benchmarks, generated by benchmarks/full_scale.py (seed {seed}).
Do not edit these files: the mention index cache below is keyed on kb.sqlite's size and modification time.

kb.sqlite          the entity database (mluke's SQLite kb format): {entities:,} entities Q4..Q{last}, the entity
                   vocabulary of the checkpoint {model}; names in the 24 mLUKE languages:
                   {titles:,} titles, {names:,} labels+aliases, {anchors:,} anchor rows (surface -> entity -> count,
                   Zipfian), {surfaces:,} surface forms with link statistics, {entity_links:,} entity link counts.
                   {mib:,} MiB. No facts, templates or redirects.
                   Use: mluke link corpus/en.txt --lang en --db {work}/kb.sqlite --model {model}
home/              MLUKE_HOME with the cached mention index of each corpus language (as `mluke link --lang L`
                   builds it): export MLUKE_HOME={work}/home to reuse it instead of rebuilding it.
corpus.jsonl       {{"id", "lang", "text"}} news-sized documents (200-400 words; ja/zh: tokens without spaces)
                   mentioning the kb's entities by their anchor surfaces.
corpus/<lang>.txt  the same documents, one per line, per language ({langs}).
results.json       what benchmarks/full_scale.py measured (times, disk, open times, peak RSS).
mlama/             (if present) a generated mLAMA folder, see benchmarks/mlama_full.py.
"""


def write_readme(work: Path, model: Path, seed: int, counts: dict) -> None:
    text = README.format(
        seed=seed,
        last=counts["entities"] + 3,
        model=model,
        work=work,
        langs=", ".join(CORPUS_LANGS),
        **{
            k: v
            for k, v in counts.items()
            if k in ("entities", "titles", "names", "anchors", "surfaces", "entity_links", "mib")
        },
    )
    (work / "README.txt").write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work" / "world")
    ap.add_argument("--model", type=Path, default=Path(__file__).parent / "work" / "mluke-base-random")
    ap.add_argument("--entities", type=int, default=1_200_000 - 3, help="entities Q4 ... Q(3 + N)")
    ap.add_argument("--docs", type=int, default=1200)
    ap.add_argument("--link-docs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=3, help="processes generating the languages' rows")
    ap.add_argument("--skip-kb", action="store_true", help="keep the existing kb (and its cached indexes)")
    ap.add_argument("--skip-link", action="store_true", help="do not measure mluke link")
    ap.add_argument("--index-langs", help="languages whose mention index to build (default: the corpus's)")
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.work, args.entities, args.docs, args.link_docs = smoke_folder(), 1997, 20, 2
        args.model = args.work / "model"
        make_checkpoint(args.model, smoke=True)
        for k in [k for k in LANG_WEIGHTS if k not in ("en", "de", "ja", "ru")]:
            del LANG_WEIGHTS[k]
    global CORPUS_LANGS
    CORPUS_LANGS = tuple(l for l in CORPUS_LANGS if l in LANG_WEIGHTS)
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    results_path = work / "results.json"
    results: dict = json.loads(results_path.read_text()) if results_path.exists() else {}
    results["machine"] = f"{os.cpu_count()} CPUs"

    def save() -> None:
        results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    db_path = work / "kb.sqlite"
    home = work / "home"
    if not args.skip_kb:
        if home.exists():
            shutil.rmtree(home)
        results["kb"] = build_kb(db_path, args.entities, args.seed, args.workers)
        save()
        print(json.dumps({"kb": results["kb"]}), flush=True)
    write_readme(work, args.model, args.seed, results["kb"])
    if not args.skip_kb or "corpus" not in results:
        results["corpus"] = write_corpus(db_path, work, args.docs, args.seed)
        save()
        print(json.dumps({"corpus": results["corpus"]}), flush=True)
    results["open"] = measure_open(db_path)
    save()
    print(json.dumps({"open": results["open"]}), flush=True)
    index_langs = tuple(args.index_langs.split(",")) if args.index_langs else CORPUS_LANGS
    results["mention_index"] = {**results.get("mention_index", {}), **build_index(db_path, home, index_langs)}
    save()
    if not args.skip_link:
        texts = (work / "corpus" / "en.txt").read_text(encoding="utf-8").splitlines()[: args.link_docs]
        sample = work / f"link-sample-{len(texts)}.txt"
        sample.write_text("\n".join(texts) + "\n", encoding="utf-8")
        env = {**os.environ, "MLUKE_HOME": str(home)}
        argv = ["link", str(sample), "--lang", "en", "--model", str(args.model), "--db", str(db_path)]
        argv += ["--jsonl", str(work / "link-sample.jsonl"), "--overwrite", "--no-progress"]
        results["link"] = {"documents": len(texts), "command": "mluke " + " ".join(argv), **peak_rss_of(argv, env)}
        save()
        print(json.dumps({"link": results["link"]}), flush=True)


if __name__ == "__main__":
    main()
