"""KnowBert masking: 15% of the pieces in whole units, 80/10/10, candidate spans masked whole, candidates of
masked spans replaced by the [MASK] row (no leakage), seeded."""

from __future__ import annotations

import numpy as np
import pytest

from mluke.knowbert.batch import IGNORE
from mluke.knowbert.candidates import CandidateSelector, Window
from mluke.knowbert.masking import MaskingOptions, MaskVocabulary, mask_window, masking_units
from mluke.models.tokenizer import MlukeTokenizer
from mluke.pretraining.corpus import Document
from tests.mluke.knowbert.test_candidates import kb_index, selector, tok  # noqa: F401  (fixtures)

MASK_ROW = 1


@pytest.fixture(scope="module")
def vocab(tok: MlukeTokenizer) -> MaskVocabulary:  # noqa: F811
    return MaskVocabulary.from_tokenizer(tok)


TEXT = (
    "Tokyo is the capital of Japan and Copenhagen is the capital of Denmark, far from Tokyo and from Japan. "
    "People in Japan speak Japanese and people in Denmark do not."
)


@pytest.fixture
def window(selector: CandidateSelector) -> Window:  # noqa: F811
    [w] = selector.document(Document("en", TEXT, [(0, 5, "Q1490"), (24, 29, "Q17")]))
    return w


def test_units_keep_spans_and_words_whole(window: Window, vocab: MaskVocabulary) -> None:
    units = masking_units(window, vocab, MaskingOptions())
    assert units[0] == -1 and units[-1] == -1
    for s, e in window.spans:
        assert len(set(units[s : e + 1].tolist())) == 1  # a span is one unit
    words = masking_units(window, vocab, MaskingOptions(whole_spans=False))
    pieces = masking_units(window, vocab, MaskingOptions(whole_spans=False, whole_words=False))
    assert pieces[1:-1].tolist() == list(range(len(window.input_ids) - 2))
    assert words.max() <= pieces.max() and units.max() <= words.max()


def test_japanese_pieces_are_units_of_their_own(selector: CandidateSelector, vocab: MaskVocabulary) -> None:  # noqa: F811
    [w] = selector.document(Document("ja", "東京都は日本の首都です。日本語を話す。", []))
    units = masking_units(w, vocab, MaskingOptions(whole_spans=False))
    # without spaces, SentencePiece's "words" would be the whole sentence; here each piece is a unit
    # (<unk> pieces, for characters the tiny vocabulary lacks, are never masked)
    n = sum(1 for i in w.input_ids[1:-1] if not vocab.special[i])
    assert n > 10 and [u for u in units.tolist() if u >= 0] == list(range(n))
    spans = masking_units(w, vocab, MaskingOptions())
    (s0, e0) = w.spans[0]
    assert vocab.special[w.input_ids[s0 : e0 + 1]].any()  # an <unk> inside 東京都, for the tiny vocabulary
    for s, e in w.spans:
        assert len(set(spans[s : e + 1].tolist()) - {-1}) == 1


def test_mask_share_labels_and_no_leakage(window: Window, vocab: MaskVocabulary) -> None:
    counts = np.zeros(3)
    masked_total = maskable = 0
    for seed in range(200):
        out = mask_window(window, np.random.default_rng(seed), vocab, MASK_ROW)
        labels = np.array(out.labels)
        masked = labels != IGNORE
        assert labels[masked].tolist() == np.array(window.input_ids)[masked].tolist()  # targets: the originals
        assert not masked[0] and not masked[-1]
        ids = np.array(out.input_ids)
        counts += [
            (ids[masked] == vocab.mask_id).sum(),
            ((ids[masked] != vocab.mask_id) & (ids[masked] != labels[masked])).sum(),
            (ids[masked] == labels[masked]).sum(),
        ]
        assert (ids[~masked] == np.array(window.input_ids)[~masked]).all()
        masked_total += masked.sum()
        maskable += len(ids) - 2
        for j, (s, e) in enumerate(window.spans):
            hit = masked[s : e + 1]
            if hit.any():
                assert hit.all()  # whole spans
                assert out.entity_ids[j] == [MASK_ROW] and out.log_prior[j] == [0.0] and out.gold[j] == IGNORE
            else:
                assert out.entity_ids[j] == window.entity_ids[j] and out.gold[j] == window.gold[j]
    assert masked_total / maskable == pytest.approx(0.15, abs=0.03)
    shares = counts / counts.sum()
    assert shares[0] == pytest.approx(0.8, abs=0.05) and shares[1] == pytest.approx(0.1, abs=0.04)


def test_span_overlapping_a_masked_piece_is_masked_without_whole_spans(window: Window, vocab: MaskVocabulary) -> None:
    opts = MaskingOptions(whole_spans=False, whole_words=False, word_prob=0.5)
    seen_partial = False
    for seed in range(50):
        out = mask_window(window, np.random.default_rng(seed), vocab, MASK_ROW, opts)
        masked = np.array(out.labels) != IGNORE
        for j, (s, e) in enumerate(window.spans):
            hit = masked[s : e + 1]
            seen_partial |= bool(hit.any() and not hit.all())
            assert (out.entity_ids[j] == [MASK_ROW]) == bool(hit.any())
    assert seen_partial  # some span had only part of its pieces masked, and still lost its candidates


def test_seeded_and_input_unchanged(window: Window, vocab: MaskVocabulary) -> None:
    before = (list(window.input_ids), [list(r) for r in window.entity_ids])
    a = mask_window(window, np.random.default_rng([0, 3, 1]), vocab, MASK_ROW)
    b = mask_window(window, np.random.default_rng([0, 3, 1]), vocab, MASK_ROW)
    c = mask_window(window, np.random.default_rng([0, 3, 2]), vocab, MASK_ROW)
    assert a == b and a != c
    assert (window.input_ids, window.entity_ids) == before and window.labels is None


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="at most 1"):
        MaskingOptions(mask_share=0.9, random_share=0.2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        MaskingOptions(word_prob=1.5)
