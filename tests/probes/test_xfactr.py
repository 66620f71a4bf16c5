"""X-FACTR: its data layout, its templates' marks and its exact-match-with-aliases rule."""

import json
from types import SimpleNamespace

import pytest

from kb.errors import InputFormatError
from probes.xfactr import XfactrFact, compare_xfactr, eval_xfactr, read_xfactr, score_relation
from probes.xfactr_marks import Marks

PROMPTS = (
    "pid,relation,en,fr,ru,tr\n"
    "P19,place of birth,[X] was born in [Y] .,[X] est [né;X-Gender=MASC|née;X-Gender=FEM] [PREPLOC;Y] [Y] .,"
    "[X.Nom] [родился;X-Gender=MASC|родилась;X-Gender=FEM|родилось;X-Gender=NEUT] в [Y.Ess] .,[X] [Y.Loc] doğdu .\n"
    "P36,capital,The capital of [X] is [Y] .,La capitale [PREPDEF;X] [X] est [Y] .,Столица [X.Gen] — [Y.Nom] .,"
    "[X.Gen] başkenti [Y;be] .\n"
)


def write_xfactr(root):
    data = root / "data"
    (data / "mTRExf" / "sub").mkdir(parents=True)
    (data / "alias" / "mTRExf").mkdir(parents=True)
    (data / "TREx_prompts.csv").write_text(PROMPTS, encoding="utf-8")
    facts = {
        "P19": [("Q7186", "Marie Curie", "Q270", "Warsaw"), ("Q937", "Albert Einstein", "Q3012", "Ulm")],
        "P36": [("Q142", "France", "Q90", "Paris"), ("Q17", "Japan", "Q1490", "Tokyo")],
    }
    for pid, rows in facts.items():
        lines = [
            json.dumps(
                {"uuid": f"u{i}", "predicate_id": pid, "sub_uri": s, "sub_label": sl, "obj_uri": o, "obj_label": ol}
            )
            for i, (s, sl, o, ol) in enumerate(rows)
        ]
        (data / "mTRExf" / "sub" / f"{pid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    names = [
        'Q7186\t"Marie Curie"@en\t"Marie Curie"@fr',
        'Q270\t"Warsaw"@en\t"Varsovie"@fr',
        'Q937\t"Albert Einstein"@en',
        'Q3012\t"Ulm"@en',
        'Q142\t"France"@en\t"France"@fr',
        'Q90\t"Paris"@en\t"Paris"@fr',
        'Q17\t"Japan"@en\t"Japon"@fr',
        'Q1490\t"Tokyo"@en\t"T\\u014dky\\u014d"@fr',
    ]
    (data / "mTRExf_unicode_escape.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    (data / "mTRExf_gender.txt").write_text("Q7186\tfemale\nQ937\tmale\nQ142\tnone\n", encoding="utf-8")
    classes = [
        "Q7186\tQ5,human",
        "Q270\tQ515,city\tQ1637706,million city",
        "Q3012\tQ515,city",
        "Q142\tQ3624078,sovereign state\tQ6256,country",
        "Q17\tQ112099,island nation\tQ6256,country",
    ]
    (data / "mTRExf_instanceof.txt").write_text("\n".join(classes) + "\n", encoding="utf-8")
    (data / "alias" / "mTRExf" / "en.txt").write_text("Q270\tWarszawa\nQ1490\tTokyo City\tTōkyō\n", encoding="utf-8")
    return root


def test_marks_filled_per_fact_from_the_folders_genders_and_classes(tmp_path):
    root = write_xfactr(tmp_path)
    fr = Marks.for_folder(root / "data", "fr")
    p19, p36 = read_xfactr(root, "fr")
    assert [f.fill(fr, p19.template).template for f in p19.facts] == ["[X] est née à [Y] .", "[X] est né à [Y] ."]
    assert [f.fill(fr, p36.template).template for f in p36.facts] == [
        "La capitale de la [X] est [Y] .",  # France: a country, -ance feminine
        "La capitale du [X] est [Y] .",  # Japon: a country, -on masculine
    ]


def test_reads_facts_names_aliases_and_genders(tmp_path):
    root = write_xfactr(tmp_path)
    en = read_xfactr(root, "en")
    assert [r.pid for r in en] == ["P19", "P36"]
    curie = en[0].facts[0]
    assert curie == XfactrFact(
        "Q7186",
        "Marie Curie",
        "Q270",
        "Warsaw",
        ("Warszawa",),
        "FEM",
        None,
        "Q5,human",
        "Q515,city,Q1637706,million city",
    )
    fr = read_xfactr(root / "data", "fr", relations=["P36"])
    assert [(f.subject, f.object) for f in fr[0].facts] == [("France", "Paris"), ("Japon", "Tōkyō")]
    assert read_xfactr(root, "ru")[0].facts[1].subject == "Albert Einstein"  # no Russian name: English
    with pytest.raises(InputFormatError, match="no templates for 'ja'"):
        read_xfactr(root, "ja")
    with pytest.raises(InputFormatError, match="TREx_prompts.csv: missing"):
        read_xfactr(tmp_path / "nowhere", "en")


def test_exact_match_against_label_or_alias():
    facts = [XfactrFact("Q1", "A", "Q1490", "Tokyo", ("Tokyo City",)), XfactrFact("Q2", "B", "Q90", "Paris")]
    assert score_relation(facts, ["Tokyo City", " Paris "]) == 1.0
    assert score_relation(facts, ["tokyo", "Paris France"]) == 0.0  # exact: neither case nor extra words
    assert score_relation(facts, ["Tokyo", ""]) == 0.5
    be = Marks("tr").copula  # Turkish [Y;be]: the answer with its copula
    assert score_relation(facts, ["Tokyo'dur", "Paris'tir"], [be, be]) == 1.0
    assert score_relation(facts, ["Tokyo'dur", "Paris'tir"], [be, None]) == 0.5  # Paris: no form asked


def test_eval_decodes_per_rendered_template_and_averages_relations(tmp_path, monkeypatch):
    root = write_xfactr(tmp_path)
    asked = []

    def decode(model, tok, template, subjects, **kw):
        asked.append((template.text, list(subjects), kw["method"], kw["max_pieces"]))
        right = {"Marie Curie": "Warszawa", "France": "Paris", "Japan": "Kyoto"}
        if template.text == "[X] başkenti [Y] .":  # Turkish P36, [Y;be]: the answer takes the copula
            right = {"France": "Paris'tir", "Japan": "Tokyo"}
        return [[SimpleNamespace(text=right.get(s, "Berlin"))] for s in subjects]

    monkeypatch.setattr("mluke.probing.decoding.decode", decode)
    monkeypatch.setattr(
        "mluke.opening.open_model", lambda model, word_models: SimpleNamespace(model=None, tokenizer=SimpleNamespace())
    )
    report = eval_xfactr(root, "any", ["en", "fr"], method="left-to-right", max_pieces=3)
    assert report.accuracy["en"] == {"P19": 0.5, "P36": 0.5} and report.macro["en"] == 0.5
    assert report.facts["en"] == {"P19": 2, "P36": 2}
    fr_p19 = [a for a in asked if a[0].startswith("[X] est ")]
    assert sorted(t for t, *_ in fr_p19) == ["[X] est né à [Y] .", "[X] est née à [Y] ."]  # one decoding per gender
    assert all(m == "left-to-right" and n == 3 for *_, m, n in asked)
    assert report.notes == []
    tr = eval_xfactr(root, "any", ["tr"], relations=["P36"])
    assert tr.accuracy["tr"] == {"P36": 0.5}  # Paris'tir right, Tokyo without its copula wrong
    assert tr.notes == ["tr: names not inflected for case (X-FACTR inflects them with trained models) in P36"]


def test_models_side_by_side(tmp_path, monkeypatch, cli):
    root = write_xfactr(tmp_path / "xfactr")

    def decode(model, tok, template, subjects, **kw):  # the model "good" knows two capitals and one birthplace
        right = {"Marie Curie": "Warsaw", "France": "Paris", "Japan": "Tokyo"} if model == "good" else {}
        return [[SimpleNamespace(text=right.get(s, "Berlin"))] for s in subjects]

    monkeypatch.setattr("mluke.probing.decoding.decode", decode)
    monkeypatch.setattr(
        "mluke.opening.open_model", lambda model, word_models: SimpleNamespace(model=model, tokenizer=SimpleNamespace())
    )
    comparison = compare_xfactr(root, ["good", "bad"], ["en", "fr"])
    assert comparison.reports[0].accuracy == eval_xfactr(root, "good", ["en", "fr"]).accuracy
    columns, rows = comparison.table()
    assert columns == ["lang", "relation", "good", "bad"]
    assert rows == [
        ["en", "P19", 50.0, 0.0],
        ["en", "P36", 100.0, 0.0],
        ["en", "macro", 75.0, 0.0],
        ["fr", "P19", 0.0, 0.0],  # French names: Varsovie, not Warsaw
        ["fr", "P36", 50.0, 0.0],  # Japon, not Japan: not in the good model's answers
        ["fr", "macro", 25.0, 0.0],
    ]
    res = cli("eval-xfactr", root, model=["good", "bad"], langs="en,fr", csv=tmp_path / "x.csv")
    assert res.exit_code == 0, res.output
    assert "note" not in res.output  # every mark of the French templates filled
    lines = (tmp_path / "x.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "model,lang,relation,accuracy" and lines[3] == "good,en,macro,75.0" and len(lines) == 13
    res = cli("eval-xfactr", root, model=["good", "bad"], langs="ru")
    assert res.exit_code == 0, res.output
    assert (
        "note: good: ru: names not inflected for case (X-FACTR inflects them with trained models) in P19, P36"
        in res.output
    )
    res = cli("eval-xfactr", root, model=["good", "bad"], langs="en", json="-")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [m["model"] for m in data["models"]] == ["good", "bad"] and data["models"][1]["macro"] == {"en": 0.0}
