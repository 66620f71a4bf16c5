"""The field's benchmarks in their own layouts (AIDA-CoNLL, NIF, X-FACTR, BEAR, LM-KBC), each scored by its own
rules with the demo model and a masked LM side by side.

No network: the real data sets cannot be fetched, so each is **generated from the embedded kb** in its real
file layout (countries, capitals, cities, continents, languages; our sentences) and read back by the library's
readers, as a user's download would be:

- AIDA-CoNLL: ``AIDA-YAGO2-dataset.tsv`` (``testb`` documents; gold = the en Wikipedia titles);
- NIF: a GERBIL-style Turtle corpus in German (gold = ``de.wikipedia.org`` IRIs);
- X-FACTR: its ``data/`` folder (``TREx_prompts.csv`` with X-FACTR's own en/fr/ja templates for P36, P30, P37,
  marks included, ``mTRExf/sub/``, names, instance-of classes);
- BEAR: ``metadata_relations.json`` and ``P*.jsonl`` (answer spaces = the relation's objects in the sample);
- LM-KBC 2024: ``countryLandBordersCountry`` gold rows from the kb's borders (P47); predictions = the
  candidates at or above ``--threshold`` (``mluke.probe(threshold=...)``, ``probes.lmkbc.rows_from_probe``).

The models: the demo model (``--model``; default a ``small`` demo, the demo's recipe on en, ja, de and fr at hidden
64 and two layers, trained into ``--work`` in minutes: the full demo takes over an hour here; ``--demo tiny``: the
tests' tiny preset) and **its own word encoder exported as a plain XLM-R masked LM** (``XLMRobertaForMaskedLM``: the
same word embeddings, layers and word head, no entity embeddings or entity head), the mLUKE paper's comparison of
the same words with and without entities. The export is checked: its word logits equal the demo's on the sample's
sentences. X-FACTR and BEAR score words only, so both columns must agree there; LM-KBC asks the demo in entity mode
(its entity head) and the masked LM in word mode; a masked LM cannot link (no entity head), so the AIDA and NIF
tables put the kb's prior (``method="prior"``, no model) beside the demo's combined linker.

    python benchmarks/field_benchmarks.py [--model DEMO] [--facts 60] [--json benchmarks/results/field_benchmarks.json]
    python benchmarks/field_benchmarks.py --smoke
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

from common import add_smoke, smoke_demo, smoke_folder

HERE = Path(__file__).resolve().parent
#: X-FACTR's templates of three relations (its TREx_prompts.csv) in the demo's languages that X-FACTR has
XFACTR_TEMPLATES = {
    "P36": (
        "capital",
        "The capital of [X] is [Y] .",
        "La capitale [PREPDEF;X] [X] est [Y] .",
        "[X]の首都は[Y]である。",
    ),
    "P30": (
        "continent",
        "[X] is located in [Y] .",
        "[X] est [situé;X-Gender=MASC|située;X-Gender=FEM] en [Y] .",
        "[X]は[Y]大陸にある。",
    ),
    "P37": (
        "official language",
        "The official language of [X] is [Y] .",
        "La langue officielle [PREPDEF;X] [X] est [ARTDEF;Y] [Y] .",
        "[X]の公用語は[Y]である。",
    ),
}
BEAR_TEMPLATES = {
    "P36": "The capital of [X] is [Y].",
    "P30": "[X] is located in [Y].",
    "P37": "The official language of [X] is [Y].",
}
#: the ``small`` demo preset (see :func:`train_small`)
SMALL: dict[str, Any] = {
    "languages": ("en", "ja", "de", "fr"),
    "languages_per_fact": 3,
    "max_border_facts": 200,
    "hidden_size": 64,
    "layers": 2,
    "heads": 2,
    "entity_emb_size": 32,
    "epochs": 8.0,
    "batch_size": 32,
    "minutes": 3.0,
}
#: Wikidata's classes of the kb's kinds, for X-FACTR's mTRExf_instanceof.txt
CLASSES = {"country": "Q6256", "city": "Q515", "continent": "Q5107", "language": "Q34770", "currency": "Q8142"}


def train_small(work: Path) -> Path:
    """The ``small`` demo: the demo's recipe on its four tiny-preset languages (en, ja, de, fr) at hidden 64, two
    layers, 8 epochs (a few minutes on 2 cores), into ``work``."""
    from mluke.demo.data import DemoPreset
    from mluke.demo.model import train_demo

    preset = DemoPreset(**SMALL)
    return train_demo(work / "demo-small", preset=preset, progress=False)


# -- the masked LM -------------------------------------------------------------------------------------------------
def export_word_lm(demo: Path, out: Path) -> Path:
    """The demo checkpoint's word encoder and word head as an ``XLMRobertaForMaskedLM`` folder (its tokenizer too);
    an error if a weight of the XLM-R model is left unfilled."""
    import torch
    from safetensors.torch import load_file
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    cfg = json.loads((demo / "config.json").read_text(encoding="utf-8"))
    keep = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    more = ("hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps")
    config = XLMRobertaConfig(
        **{k: cfg[k] for k in keep + more}, pad_token_id=1, bos_token_id=0, eos_token_id=2, tie_word_embeddings=False
    )
    state = load_file(str(demo / "model.safetensors"))
    words = {"roberta." + k[5:]: v for k, v in state.items() if k.startswith(("luke.embeddings.", "luke.encoder."))}
    words |= {k: v for k, v in state.items() if k.startswith("lm_head.")}
    torch.manual_seed(0)
    model = XLMRobertaForMaskedLM(config)
    missing, unexpected = model.load_state_dict(words, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise SystemExit(
            f"{demo}: the word encoder does not map onto XLM-R: missing {missing}, unexpected {unexpected}"
        )
    model.save_pretrained(out)
    (out / "tokenizer.json").write_bytes((demo / "tokenizer.json").read_bytes())
    specials = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>"}
    specials |= {"pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"}
    tok_config = {"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512, **specials}
    (out / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=1), encoding="utf-8")
    (out / "special_tokens_map.json").write_text(json.dumps(specials, indent=1), encoding="utf-8")
    return out


def check_export(demo: Path, words: Path, texts: list[str]) -> dict[str, Any]:
    """The largest difference between the demo's word logits and the exported masked LM's on ``texts``, and
    whether both read the texts into the same piece ids."""
    import torch

    from mluke.opening import open_model

    a, b = open_model(str(demo), word_models=True), open_model(str(words), word_models=True)
    enc_a, enc_b = a.tokenizer(texts), b.tokenizer(texts)
    same_ids = bool(torch.equal(enc_a["input_ids"], enc_b["input_ids"]))
    with torch.no_grad():
        states_a = a.model.encode(input_ids=enc_a["input_ids"], attention_mask=enc_a["attention_mask"])[0]
        states_b = b.model.encode(input_ids=enc_b["input_ids"], attention_mask=enc_b["attention_mask"])[0]
        mask = enc_a["attention_mask"].bool()
        logits_a = a.model.word_scores(states_a[mask], normalize=False)
        logits_b = b.model.word_scores(states_b[mask], normalize=False)
        diff = (logits_a - logits_b).abs().max().item()
    return {"texts": len(texts), "same_piece_ids": same_ids, "max_abs_logit_diff": diff}


# -- the data sets, from the embedded kb ---------------------------------------------------------------------------
def sample(db: Any, facts: int) -> dict[str, Any]:
    """The facts each benchmark is made of: the first ``facts`` of each relation (by subject key) whose entities
    are named in en, fr, ja and de."""
    langs = ("en", "fr", "ja", "de")
    chosen: dict[str, list[Any]] = {}
    for pid in ("P36", "P30", "P37", "P17", "P47"):
        rows = sorted(db.facts(property=pid), key=lambda f: (f.subject, f.object))
        keys = sorted({k for f in rows for k in (f.subject, f.object)})
        ents = db.entities(keys)
        named = [f for f in rows if all(l in ents[k].labels for k in (f.subject, f.object) for l in langs)]
        chosen[pid] = named
    subjects = sorted({f.subject for f in chosen["P36"]})[:facts]
    out = {pid: [f for f in chosen[pid] if f.subject in subjects] for pid in ("P36", "P30", "P37", "P47")}
    out["P17"] = [f for f in chosen["P17"] if f.object in subjects][:facts]
    keys = sorted({k for rows in out.values() for f in rows for k in (f.subject, f.object)})
    out["entities"] = db.entities(keys)
    return out


def _mentions(text: str, names: list[tuple[str, str]]) -> list[tuple[int, int, str]]:
    """(start, end, key) of each name in ``text``, in order (each name once, searched left to right)."""
    out, pos = [], 0
    for name, key in names:
        start = text.index(name, pos)
        out.append((start, start + len(name), key))
        pos = start + len(name)
    return out


def documents(data: dict[str, Any], lang: str, per_doc: int = 4) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """Documents of ``per_doc`` sentences (a capital's and a city's facts), each with its linked mentions."""
    ents = data["entities"]
    say = {
        "en": ("The capital of {a} is {b} .", "{a} is a city in {b} ."),
        "de": ("Die Hauptstadt von {a} ist {b} .", "{a} ist eine Stadt in {b} ."),
    }[lang]
    sentences = []
    for pid, text in (("P36", say[0]), ("P17", say[1])):
        for f in data[pid]:
            a, b = ents[f.subject].labels[lang], ents[f.object].labels[lang]
            sentences.append((text.format(a=a, b=b), [(a, f.subject), (b, f.object)]))
    docs = []
    for i in range(0, len(sentences), per_doc):
        chunk = sentences[i : i + per_doc]
        text, spans = "", []
        for sentence, names in chunk:
            base = len(text) + (1 if text else 0)
            text = f"{text} {sentence}" if text else sentence
            spans += [(s + base, e + base, k) for s, e, k in _mentions(sentence, names)]
        docs.append((text, spans))
    return docs


def write_aida(path: Path, data: dict[str, Any]) -> Path:
    """``AIDA-YAGO2-dataset.tsv``: testb documents (ids from 1163), one token a line, mentions B/I with the en
    title, its URL, an id and no mid."""
    ents, lines = data["entities"], []
    for n, (text, spans) in enumerate(documents(data, "en")):
        lines.append(f"-DOCSTART- ({1163 + n}testb GEO)")
        pos = 0
        for token in text.split(" "):
            start = text.index(token, pos)
            pos = start + len(token)
            span = next((s for s in spans if s[0] <= start < s[1]), None)
            if span is None:
                lines.append(token)
                continue
            title = ents[span[2]].titles["en"]
            tag = "B" if start == span[0] else "I"
            url = "http://en.wikipedia.org/wiki/" + title.replace(" ", "_")
            mention = text[span[0] : span[1]]
            lines.append("\t".join([token, tag, mention, title.replace(" ", "_"), url, str(n), "/m/0"]))
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_nif(path: Path, data: dict[str, Any], lang: str = "de") -> Path:
    """A NIF 2.0 Turtle corpus as GERBIL's datasets ship it: a ``nif:Context`` per document, a ``nif:Phrase`` per
    mention with ``itsrdf:taIdentRef`` the mention's Wikipedia page in ``lang``."""
    from urllib.parse import quote

    ents = data["entities"]
    out = [
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
        "@prefix nif: <http://persistence.uni-leipzig.org/nlp2rdf/ontologies/nif-core#> .",
        "@prefix itsrdf: <http://www.w3.org/2005/11/its/rdf#> .",
        "",
    ]
    lit = lambda s: json.dumps(s, ensure_ascii=False)  # noqa: E731
    for n, (text, spans) in enumerate(documents(data, lang)):
        doc = f"http://example.org/mluke-field/doc-{n:03d}"
        ctx = f"<{doc}#char=0,{len(text)}>"
        out += [
            f"{ctx} a nif:String , nif:Context , nif:RFC5147String ;",
            f'    nif:beginIndex "0"^^xsd:nonNegativeInteger ; nif:endIndex "{len(text)}"^^xsd:nonNegativeInteger ;',
            f"    nif:isString {lit(text)}@{lang} .",
            "",
        ]
        for s, e, key in spans:
            page = f"https://{lang}.wikipedia.org/wiki/" + quote(ents[key].titles[lang].replace(" ", "_"))
            out += [
                f"<{doc}#char={s},{e}> a nif:String , nif:Phrase , nif:RFC5147String ;",
                f"    nif:anchorOf {lit(text[s:e])}@{lang} ;",
                f'    nif:beginIndex "{s}"^^xsd:nonNegativeInteger ; nif:endIndex "{e}"^^xsd:nonNegativeInteger ;',
                f"    nif:referenceContext {ctx} ;",
                f"    itsrdf:taIdentRef <{page}> .",
                "",
            ]
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def _escape(text: str) -> str:
    return "".join(c if ord(c) < 128 else f"\\u{ord(c):04x}" for c in text)


def write_xfactr(root: Path, data: dict[str, Any]) -> Path:
    """X-FACTR's ``data/`` layout: templates, facts, names (``\\uXXXX`` escaped), instance-of classes."""
    ents, folder = data["entities"], root / "data"
    (folder / "mTRExf" / "sub").mkdir(parents=True)
    with (folder / "TREx_prompts.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["pid", "relation", "en", "fr", "ja"])
        writer.writerows([pid, *row] for pid, row in XFACTR_TEMPLATES.items())
    for pid in XFACTR_TEMPLATES:
        rows = [
            {"sub_uri": f.subject, "sub_label": ents[f.subject].labels["en"], "obj_uri": f.object}
            | {"obj_label": ents[f.object].labels["en"], "predicate_id": pid}
            for f in data[pid]
        ]
        (folder / "mTRExf" / "sub" / f"{pid}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    names = [
        key + "".join(f'\t"{_escape(e.labels[lang])}"@{lang}' for lang in ("en", "fr", "ja") if lang in e.labels)
        for key, e in sorted(ents.items())
    ]
    (folder / "mTRExf_unicode_escape.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    classes = [f"{key}\t{CLASSES[e.kind]},{e.kind}" for key, e in sorted(ents.items()) if e.kind in CLASSES]
    (folder / "mTRExf_instanceof.txt").write_text("\n".join(classes) + "\n", encoding="utf-8")
    return root


def write_bear(folder: Path, data: dict[str, Any]) -> Path:
    """BEAR's layout: ``metadata_relations.json`` (a template, the answer space as labels and ids) and
    ``P*.jsonl``."""
    ents, meta = data["entities"], {}
    folder.mkdir(parents=True)
    for pid, template in BEAR_TEMPLATES.items():
        objects = sorted({f.object for f in data[pid]})
        meta[pid] = {
            "templates": [template],
            "answer_space_labels": [ents[o].labels["en"] for o in objects],
            "answer_space_ids": objects,
        }
        rows = [
            {"predicate_id": pid, "sub_id": f.subject, "sub_label": ents[f.subject].labels["en"]}
            | {"obj_id": f.object, "obj_label": ents[f.object].labels["en"]}
            for f in data[pid]
        ]
        (folder / f"{pid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "metadata_relations.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return folder


def write_lmkbc_gold(path: Path, data: dict[str, Any]) -> Path:
    """LM-KBC 2024 gold rows of ``countryLandBordersCountry``: every sampled country, its bordering countries
    (an empty list for an island)."""
    from probes.lmkbc import LmkbcRow, write_lmkbc

    ents = data["entities"]
    borders: dict[str, list[str]] = {f.subject: [] for f in data["P36"]}
    for f in data["P47"]:
        if f.object in ents:
            borders.setdefault(f.subject, []).append(f.object)
    rows = [
        LmkbcRow(s, ents[s].labels["en"], "countryLandBordersCountry", tuple(o), tuple(ents[k].labels["en"] for k in o))
        for s, o in sorted(borders.items())
    ]
    return write_lmkbc(rows, path)


# -- the runs ------------------------------------------------------------------------------------------------------
def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import kb
    import mluke
    from probes.aida import eval_aida
    from probes.bear import compare_bear
    from probes.lmkbc import read_lmkbc, rows_from_probe, score_lmkbc
    from probes.nif_eval import eval_nif
    from probes.xfactr import compare_xfactr

    db = kb.default_db()
    data = sample(db, args.facts)
    demo = Path(args.model) if args.model else train_small(work) if args.demo == "small" else smoke_demo()
    words = export_word_lm(demo, work / "demo-words")
    models = {"demo": str(demo), "masked LM": str(words)}
    texts = [t for t, _ in documents(data, "en")] + [t for t, _ in documents(data, "de")]
    root = HERE.parent
    report: dict[str, Any] = {
        "model": str(demo.relative_to(root)) if demo.is_relative_to(root) else str(demo),
        "sample": {pid: len(data[pid]) for pid in ("P36", "P30", "P37", "P17", "P47")},
        "export_check": check_export(demo, words, texts),
        "seconds": {},
    }

    started = time.perf_counter()
    aida = write_aida(work / "AIDA-YAGO2-dataset.tsv", data)
    report["aida"] = {
        "demo": eval_aida(aida, split="testb", db=db, model=str(demo)).to_dict(),
        "prior": eval_aida(aida, split="testb", db=db, model=str(demo), method="prior").to_dict(),
    }
    nif = write_nif(work / "field-de.ttl", data)
    report["nif"] = {
        "demo": eval_nif(nif, lang="de", db=db, model=str(demo)).to_dict(),
        "prior": eval_nif(nif, lang="de", db=db, model=str(demo), method="prior").to_dict(),
    }
    report["seconds"]["linking"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    xfactr = compare_xfactr(write_xfactr(work / "X-FACTR", data), list(models.values()), ["en", "fr", "ja"])
    report["xfactr"] = {name: r.to_dict() for name, r in zip(models, xfactr.reports)}
    bear = compare_bear(write_bear(work / "BEAR", data), list(models.values()))
    report["bear"] = {name: r.to_dict() for name, r in zip(models, bear.reports)}
    report["seconds"]["xfactr_bear"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    gold = read_lmkbc(write_lmkbc_gold(work / "lmkbc-gold.jsonl", data))
    subjects = [r.subject_id for r in gold.rows]
    candidates = sorted({f.object for f in data["P47"]} | set(subjects))
    report["lmkbc"] = {"threshold": args.threshold, "subjects": len(subjects)}
    for name, model in models.items():
        result = mluke.probe(
            "[X] shares a border with [Y] .",
            lang="en",
            subjects=subjects,
            candidates=candidates,
            relation="P47",
            model=model,
            db=db,
            threshold=args.threshold,
        )
        rows = rows_from_probe(result, "countryLandBordersCountry", {r.subject_id: r.subject for r in gold.rows})
        report["lmkbc"][name] = score_lmkbc(gold.rows, rows).to_dict()
    report["seconds"]["lmkbc"] = round(time.perf_counter() - started, 1)
    return report


def summary(report: dict[str, Any]) -> str:
    """The figures of the RESULTS tables, as Markdown lines."""
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    out = [f"model {report['model']}; sample {report['sample']}; export check {report['export_check']}"]
    for bench in ("aida", "nif"):
        for name, r in report[bench].items():
            micro = r["a2kb_micro"]
            acc = r["d2kb_in_kb_accuracy"]
            out.append(
                f"{bench} {name}: A2KB micro P {pct(micro['precision'])} R {pct(micro['recall'])} "
                f"F1 {pct(micro['f1'])}; macro F1 {pct(r['a2kb_macro']['f1'])}; D2KB acc "
                + (pct(acc) if acc is not None else "-")
            )
    for name, r in report["xfactr"].items():
        cells = "; ".join(f"{lang} {pct(v)} ({r['accuracy'][lang]})" for lang, v in r["macro"].items())
        out.append(f"xfactr {name}: macro {cells}; notes {r['notes']}")
    for name, r in report["bear"].items():
        out.append(f"bear {name}: {json.dumps(r, ensure_ascii=False)[:400]}")
    for name in ("demo", "masked LM"):
        r = report["lmkbc"][name]
        out.append(f"lmkbc {name}: {json.dumps(r, ensure_ascii=False)[:400]}")
    out.append(f"seconds {report['seconds']}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="the mLUKE checkpoint (default: a demo model of --demo)")
    ap.add_argument(
        "--demo",
        choices=["small", "tiny"],
        default="small",
        help="without --model: the small demo (trained into --work, minutes) or the tiny preset (seconds, cached)",
    )
    ap.add_argument("--facts", type=int, default=60, help="countries sampled (each with its facts)")
    ap.add_argument("--threshold", type=float, default=0.02, help="LM-KBC: answer with candidates this likely")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "field")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "field_benchmarks.json")
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.facts, args.work, args.json, args.demo = 3, smoke_folder(), None, "tiny"
    if args.work.exists() and any(args.work.iterdir()):
        raise SystemExit(f"{args.work}: not empty; give another --work or remove it")
    args.work.mkdir(parents=True, exist_ok=True)
    report = run(args, args.work)
    print(summary(report))
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
