import sqlite3
from collections.abc import Iterator

import pytest

import kb
from kb.mentions.candidates import (
    MAX_CANDIDATES,
    Candidate,
    CandidateGenerator,
    CombinedCandidates,
    SurfaceEntry,
    SurfaceSource,
)
from kb.mentions.db_candidates import AnchorCandidates, NameCandidates, default_source, title_base
from kb.mentions.surfaces import surface_key
from tests.kb.mentions.linking_fixtures import write_linking_db


@pytest.fixture(scope="module")
def linking_db(tmp_path_factory):
    db = kb.EntityDB(write_linking_db(tmp_path_factory.mktemp("linking") / "linking.sqlite"))
    yield db
    db.close()


def test_anchor_priors_come_from_raw_counts(tiny_db):
    anchors = AnchorCandidates(tiny_db)
    assert anchors.candidates("en", "Tokyo") == [
        Candidate("Q1490", 100 / 102, 100, "anchors"),
        Candidate("Q1748", 2 / 102, 2, "anchors"),
    ]
    assert anchors.candidates("en", "TOKYO") == anchors.candidates("en", "tokyo") == anchors.candidates("en", "Tokyo")
    assert anchors.candidates("en", "Kyoto") == []
    assert anchors.link_probability("en", "tokyo") == pytest.approx(0.4)
    assert anchors.link_probability("en", "the") == 0.0
    assert anchors.link_probability("en", "unseen") is None
    with pytest.raises(kb.UnknownLanguageError, match="'de'"):
        anchors.candidates("de", "Tokyo")


def test_anchor_spellings_add_up(linking_db):
    anchors = AnchorCandidates(linking_db)
    # "Paris" (Q90: 50, Q830149: 5) and "paris" (Q90: 5) are one surface
    assert anchors.candidates("en", "PARIS") == [
        Candidate("Q90", 55 / 60, 55, "anchors"),
        Candidate("Q830149", 5 / 60, 5, "anchors"),
    ]
    assert anchors.link_probability("en", "Paris") == pytest.approx(50 / 100)


def test_at_most_30_candidates_best_first_with_priors_from_all_counts(tmp_path):
    with kb.EntityDB.create(tmp_path / "many.sqlite") as w:
        w.add_languages(["en"])
        for i in range(40):
            w.add_anchor("en", "Springfield", f"Q{100 + i}", 40 - i if i else 100)
    db = kb.EntityDB(tmp_path / "many.sqlite")
    cands = AnchorCandidates(db).candidates("en", "Springfield")
    total = 100 + sum(40 - i for i in range(1, 40))
    assert len(cands) == MAX_CANDIDATES == 30
    assert cands[0] == Candidate("Q100", 100 / total, 100, "anchors")
    assert [c.count for c in cands] == sorted((c.count for c in cands), reverse=True)
    assert sum(c.prior for c in cands) < 1.0  # the tail beyond 30 keeps its share
    assert len(AnchorCandidates(db, max_candidates=5).candidates("en", "Springfield")) == 5


def test_name_prior_prefers_title_over_label_over_alias(linking_db):
    names = NameCandidates(linking_db)
    cands = names.candidates("de", "Valencia")
    # plain title (4) > label and title without qualifier (2) > alias / title without qualifier (2)
    assert [c.key for c in cands] == ["Q8818", "Q2807", "Q5826"]
    assert [c.prior for c in cands] == pytest.approx([4 / 8, 2 / 8, 2 / 8])
    assert all(c.source == "names" and c.count == 0 for c in cands)
    assert names.candidates("de", "valencia") == cands  # any spelling
    assert names.link_probability("de", "Valencia") is None


def test_name_candidates_follow_redirects_and_weights_are_configurable(linking_db):
    names = NameCandidates(linking_db)
    assert [c.key for c in names.candidates("de", "Cologne")] == ["Q365"]  # two redirect hops
    assert names.candidates("de", "Schleife A") == []  # a redirect loop resolves to nothing
    uniform = NameCandidates(
        linking_db, weights=dict.fromkeys(("title", "redirect", "label", "title_base", "alias"), 1.0)
    )
    assert [c.prior for c in uniform.candidates("de", "Valencia")] == pytest.approx([1 / 3] * 3)
    with pytest.raises(kb.OptionError, match="alias"):
        NameCandidates(linking_db, weights={"title": 1.0})


def test_title_base():
    assert title_base("Valencia (Venezuela)") == "Valencia"
    assert title_base("Valencia") is None
    assert title_base("(Film)") is None


def test_combined_mixes_sources_by_weight(tiny_db):
    combined = default_source(tiny_db)
    cands = combined.candidates("en", "Tokyo")
    # anchors (weight 1): 100/102, 2/102; names (weight 0.05): title 4/5, alias 1/5
    expected = (1.0 * 100 / 102 + 0.05 * 4 / 5) / 1.05
    assert cands[0].key == "Q1490" and cands[0].prior == pytest.approx(expected)
    assert cands[0].count == 100 and cands[0].source == "anchors"
    assert sum(c.prior for c in cands) == pytest.approx(1.0)
    # a surface that only names know keeps the names' priors
    assert combined.candidates("en", "Japan") == NameCandidates(tiny_db).candidates("en", "Japan")
    assert combined.link_probability("en", "Tokyo") == pytest.approx(0.4)
    with pytest.raises(kb.OptionError, match="positive weight"):
        CombinedCandidates([(AnchorCandidates(tiny_db), 0.0)])


def _raw_names(db, lang):
    conn = sqlite3.connect(db.path)
    sql = (
        "SELECT surface FROM anchors WHERE lang = ?1 UNION SELECT title FROM titles WHERE lang = ?1 "
        "UNION SELECT name FROM names WHERE lang = ?1 UNION SELECT source FROM redirects WHERE lang = ?1"
    )
    names = [r[0] for r in conn.execute(sql, (lang,))]
    conn.close()
    return names


@pytest.mark.parametrize("make", [AnchorCandidates, NameCandidates, default_source])
def test_entries_are_sorted_unique_and_agree_with_candidates(linking_db, make):
    source = make(linking_db)
    for lang in linking_db.languages:
        entries = list(source.entries(lang))
        keys = [e.key for e in entries]
        assert keys == sorted(set(keys))
        assert all(surface_key(k) == k for k in keys)
        by_key = {e.key: list(e.candidates) for e in entries}
        for raw in _raw_names(linking_db, lang):  # any name as stored gets the entry of its key
            assert source.candidates(lang, raw) == by_key.get(surface_key(raw), []), (lang, raw)
    if make is not AnchorCandidates:
        assert {e.key for e in source.entries("ja")} >= {"東京", "東京都", "京都", "カナダ", "tokyo"}
        assert "valencia" in {e.key for e in source.entries("de")}


def test_a_new_source_needs_only_its_own_methods(linking_db):
    class Gazetteer(SurfaceSource):
        """A hand-made table: every generator gets candidates_batch for free."""

        name = "gazetteer"
        languages = ("en",)

        def candidates(self, lang: str, surface: str) -> list[Candidate]:
            return [Candidate("Q60", 1.0, 0, self.name)] if surface_key(surface) == "big apple" else []

        def entries(self, lang: str) -> Iterator[SurfaceEntry]:
            yield SurfaceEntry("big apple", tuple(self.candidates(lang, "big apple")))

    gaz = Gazetteer()
    assert isinstance(gaz, CandidateGenerator)
    assert gaz.candidates_batch("en", ["Big Apple", "nothing"]) == [[Candidate("Q60", 1.0, 0, "gazetteer")], []]
    mixed = CombinedCandidates([(gaz, 1.0), (AnchorCandidates(linking_db), 1.0)])
    assert [c.key for c in mixed.candidates("en", "big apple")] == ["Q60"]
    assert [e.key for e in mixed.entries("en")][:2] == ["at&t", "big apple"]
