"""KnowBert's candidate selector: spans, candidates with priors, gold (incl. NULL / IGNORE), word-piece alignment,
windows and collation, on a hand-built kb and the tiny tokenizer (also used by the masking and training tests)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import kb
from kb.mentions import MentionIndex
from mluke.knowbert.batch import IGNORE
from mluke.knowbert.candidates import NULL, CandidateSelector, collate, span_words
from mluke.models.tokenizer import MlukeTokenizer
from mluke.pretraining.corpus import Document
from tests.conftest import write_tiny_db

#: the tiny kb's entities as rows of a made-up entity table (0: padding, 1: [MASK])
ROWS = {"Q17": 2, "Q1490": 3, "Q1748": 4, "Q35": 5, "Q5287": 6}


@pytest.fixture(scope="module")
def kb_index(tmp_path_factory: pytest.TempPathFactory) -> MentionIndex:
    """The tiny kb's mention index, names without statistics kept (so "Japan" is found in English too)."""
    db = kb.EntityDB(write_tiny_db(tmp_path_factory.mktemp("kbdata") / "tiny.sqlite"))
    return MentionIndex.build(db, keep_unscored=True)


@pytest.fixture(scope="module")
def tok(tiny_checkpoint: Path) -> MlukeTokenizer:
    return MlukeTokenizer.from_pretrained(tiny_checkpoint)


@pytest.fixture
def selector(tok: MlukeTokenizer, kb_index: MentionIndex) -> CandidateSelector:
    return CandidateSelector(tok, kb_index, ROWS)


def test_english_spans_candidates_priors_and_gold(selector: CandidateSelector) -> None:
    text = "Tokyo is the capital of Japan."
    doc = Document("en", text, [(0, 5, "Q1490")])
    [w] = selector.document(doc)
    assert w.input_ids[0] == selector.tokenizer.bos_id and w.input_ids[-1] == selector.tokenizer.eos_id
    chars = [(w.offsets[s][0], w.offsets[e][1]) for s, e in w.spans]
    assert [text[a:b].strip() for a, b in chars] == ["Tokyo", "Japan"]
    assert w.char_spans == [(0, 5), (24, 29)]
    # Tokyo: anchors 100 -> Q1490, 2 -> Q1748 (and a small name-only share), best prior first
    assert w.entity_ids[0][:2] == [ROWS["Q1490"], ROWS["Q1748"]]
    assert w.log_prior[0][0] > w.log_prior[0][1]
    assert math.exp(w.log_prior[0][0]) == pytest.approx(100 / 102, abs=0.01)
    assert w.gold == [0, IGNORE]  # the hyperlink's entity is candidate 0; unlinked "Japan" is not supervised
    assert selector.stats.gold_found == 1 and selector.stats.hyperlinks == 1


def test_japanese_spans_without_spaces(selector: CandidateSelector) -> None:
    text = "東京都は日本の首都です。"
    [w] = selector.document(Document("ja", text, [(4, 6, "Q17")]))
    chars = [(w.offsets[s][0], w.offsets[e][1]) for s, e in w.spans]
    assert [text[a:b] for a, b in chars] == ["東京都", "日本"]  # exact: the text is cut at span boundaries
    assert w.char_spans == [(0, 3), (4, 6)]
    assert w.entity_ids == [[ROWS["Q1490"]], [ROWS["Q17"]]]
    assert w.gold == [IGNORE, 0]


def test_gold_missing_from_candidates_is_ignore_and_overlap_is_null(selector: CandidateSelector) -> None:
    text = "Tokyo Japan"
    # the editor linked "Tokyo" to Denmark (not a candidate of Tokyo): IGNORE; "Tokyo Japan" is a made-up
    # link over both names with no candidates: left out; detected spans overlapping it: NULL
    doc = Document("en", text, [(0, 5, "Q35"), (0, 11, "Q999")])
    [w] = selector.document(doc)
    chars = [text[w.offsets[s][0] : w.offsets[e][1]].strip() for s, e in w.spans]
    assert chars == ["Tokyo", "Japan"]
    assert w.gold == [IGNORE, NULL]
    st = selector.stats
    assert (st.gold_missing, st.hyperlinks_without_candidates, st.null_spans) == (1, 1, 1)


def test_surely_not_a_link_is_null(tok: MlukeTokenizer, kb_index: MentionIndex) -> None:
    text = "Tokyo is big."
    strict = CandidateSelector(tok, kb_index, ROWS, null_below=0.5)  # Tokyo's link probability is 0.4
    assert strict.document(Document("en", text, [(9, 12, "Q17")]))[0].gold == [NULL]
    lenient = CandidateSelector(tok, kb_index, ROWS)  # default 0.1
    assert lenient.document(Document("en", text, [(9, 12, "Q17")]))[0].gold == [IGNORE]


def test_candidates_missing_from_the_table_are_dropped(tok: MlukeTokenizer, kb_index: MentionIndex) -> None:
    sel = CandidateSelector(tok, kb_index, {k: v for k, v in ROWS.items() if k != "Q1748"})
    [w] = sel.encode(["Tokyo"], "en")
    assert w.entity_ids == [[ROWS["Q1490"]]] and w.gold is None
    assert sel.stats.candidates_missing_from_table == 1
    sel = CandidateSelector(tok, kb_index, {})
    [w] = sel.encode(["Tokyo and Japan"], "en")
    assert w.spans == []  # no candidate left: no span


def test_no_candidates_collates_to_one_padding_span(selector: CandidateSelector) -> None:
    windows = selector.encode(["nothing known here", "Tokyo"], "en")
    assert windows[0].spans == []
    ids, mask, c = collate(windows, selector.tokenizer.pad_id)
    assert c.span_mask.tolist() == [[False], [True]]
    assert c.gold is None and ids.shape == mask.shape
    assert mask[0].sum() == len(windows[0].input_ids) and ids[0, len(windows[0].input_ids) :].eq(1).all()


def test_more_than_30_candidates(tok: MlukeTokenizer, tmp_path: Path) -> None:
    with kb.EntityDB.create(tmp_path / "many.sqlite", provenance={"builder": "tests"}) as w:
        w.add_languages(["en"])
        for i in range(40):
            w.add_entity(f"Q{100 + i}", "city")
            w.add_anchor("en", "Springfield", f"Q{100 + i}", 1000 - i)
        w.add_surface("en", "Springfield", link_docs=50, text_docs=100)
    index = MentionIndex.build(kb.EntityDB(tmp_path / "many.sqlite"), max_candidates=60)
    rows = {f"Q{100 + i}": 10 + i for i in range(40)}
    sel = CandidateSelector(tok, index, rows)
    [w] = sel.document(Document("en", "Springfield.", [(0, 11, "Q135")]))
    assert w.entity_ids == [[10 + i for i in range(30)]]  # the 30 best priors, best first
    assert w.gold == [IGNORE]  # the link's entity (rank 36) was cut with the others
    [w] = sel.document(Document("en", "Springfield.", [(0, 11, "Q105")]))
    assert w.gold == [5]


def test_spans_at_the_window_edge(tok: MlukeTokenizer, kb_index: MentionIndex) -> None:
    text = "Tokyo and Japan and Denmark and Copenhagen and Tokyo."
    full = CandidateSelector(tok, kb_index, ROWS).encode([text], "en")[0]
    n_spans = len(full.spans)
    # a window that ends inside the second-to-last span: inference drops the span (counted) ...
    cut_at = full.spans[-2][0] + 1  # keeps the first piece of the span
    short = CandidateSelector(tok, kb_index, ROWS, max_length=cut_at + 1)
    [w] = short.encode([text], "en")
    assert len(w.input_ids) == cut_at + 1 and len(w.spans) == n_spans - 2
    assert all(e < len(w.input_ids) - 1 for _, e in w.spans)
    assert short.stats.cut_spans == 2
    # ... a document is read in windows cut between spans: every span kept, whole, once
    windows = short.document(Document("en", text, []))
    assert len(windows) > 1 and sum(len(x.spans) for x in windows) == n_spans
    assert short.stats.cut_spans == 2  # nothing more cut
    pieces = [p for x in windows for p in x.input_ids[1:-1]]
    assert pieces == full.input_ids[1:-1]
    for x in windows:
        assert len(x.input_ids) <= cut_at + 1
        for s, e in x.spans:
            assert 1 <= s <= e <= len(x.input_ids) - 2


def test_collate_pads_spans_and_candidates_and_null_becomes_k(selector: CandidateSelector) -> None:
    docs = [Document("en", "Tokyo Japan", [(0, 11, "Q999"), (0, 5, "Q1490")]), Document("ja", "日本", [])]
    windows = [w for d in docs for w in selector.document(d)]
    _, _, c = collate(windows, selector.tokenizer.pad_id)
    k = c.num_candidates
    assert k == 2 and c.entity_ids.shape == (2, 2, 2)
    assert c.gold.tolist() == [[0, k], [IGNORE, IGNORE]]  # NULL -> K; the link-less text: IGNORE
    assert c.candidate_mask.tolist() == [[[True, True], [True, False]], [[True, False], [False, False]]]
    assert c.log_prior[0, 1, 1] == 0 and c.entity_ids[1, 1].tolist() == [0, 0]
    assert c.span_start[0].tolist() == [s for s, _ in windows[0].spans]


def test_deterministic(selector: CandidateSelector, tok: MlukeTokenizer, kb_index: MentionIndex) -> None:
    doc = Document("en", "Tokyo is the capital of Japan. Tokyo again.", [(0, 5, "Q1490")])
    again = CandidateSelector(tok, kb_index, ROWS)
    a, b = selector.document(doc), again.document(doc)
    assert a == b


def test_span_words_and_long_spans(tok: MlukeTokenizer, kb_index: MentionIndex) -> None:
    assert span_words("New York City") == 3 and span_words("東京タワー") == 1 and span_words("AT&T") == 1
    sel = CandidateSelector(tok, kb_index, ROWS, max_span_words=0)
    assert sel.encode(["Tokyo"], "en")[0].spans == [] and sel.stats.long_spans == 1


def test_collate_needs_windows() -> None:
    with pytest.raises(ValueError, match="at least one"):
        collate([], 1)
