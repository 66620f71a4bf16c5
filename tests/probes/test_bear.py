"""BEAR (lm-pub-quiz): its dataset layout, within_word_l2r pseudo-log-likelihood masking, and accuracy."""

import json

import pytest
import torch

from kb.errors import InputFormatError
from probes.bear import BearRelation, masked_requests, read_bear, score_choices, statement_scores, word_ids


def write_bear(folder):
    folder.mkdir()
    meta = {
        "P30": {
            "templates": ["[X] is located in [Y].", "[X] lies in [Y]."],
            "answer_space": ["Asia", "Europe", "Africa"],
        },
        "P36": {
            "templates": ["The capital of [X] is [Y]."],
            "answer_space_labels": ["Paris", "Tokyo"],
            "answer_space_ids": ["Q90", "Q1490"],
        },
    }
    (folder / "metadata_relations.json").write_text(json.dumps(meta), encoding="utf-8")
    rows = {
        "P30": [("Q17", "Japan", "Q48", "Asia"), ("Q142", "France", "Q46", "Europe")],
        "P36": [("Q142", "France", "Q90", "Paris")],
    }
    for pid, items in rows.items():
        lines = [
            json.dumps({"predicate_id": pid, "sub_id": s, "sub_label": sl, "obj_id": o, "obj_label": ol})
            for s, sl, o, ol in items
        ]
        (folder / f"{pid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_reads_relations_templates_and_both_answer_space_layouts(tmp_path):
    folder = write_bear(tmp_path / "BEAR")
    p30, p36 = read_bear(folder)
    assert (p30.pid, p30.template, p30.answers, len(p30.instances)) == (
        "P30",
        "[X] is located in [Y].",
        ["Asia", "Europe", "Africa"],
        2,
    )
    assert p36.answers == ["Paris", "Tokyo"] and p36.answer_ids == ["Q90", "Q1490"]
    with pytest.raises(InputFormatError, match="P36 has 1 templates, no index 1"):
        read_bear(folder, template_index=1)
    with pytest.raises(InputFormatError, match="metadata_relations.json: missing"):
        read_bear(tmp_path / "nowhere")


def test_within_word_l2r_masks_the_piece_and_the_rest_of_its_word():
    text = "Tokyo lies in Asia."
    # pieces: <s> "To" "kyo" " lies" " in" " As" "ia." </s>
    offsets = [(0, 0), (0, 2), (2, 5), (5, 10), (10, 13), (13, 16), (16, 19), (0, 0)]
    words = word_ids(text, offsets)
    assert words == [None, 0, 0, 1, 2, 3, 3, None]
    ids = [0, 11, 12, 13, 14, 15, 16, 2]
    got = masked_requests(ids, words, 99)
    assert got[0] == ([0, 99, 99, 13, 14, 15, 16, 2], 1)  # "To" masks "kyo" too
    assert got[1] == ([0, 11, 99, 13, 14, 15, 16, 2], 2)
    assert got[4] == ([0, 11, 12, 13, 14, 99, 99, 2], 5) and len(got) == 6


def test_statement_score_sums_the_masked_pieces_log_probabilities():
    seen = []

    class Model:
        def encode(self, input_ids, attention_mask):
            seen.extend(input_ids.tolist())
            return input_ids.float().unsqueeze(-1).expand(-1, -1, 2), None

        def word_scores(self, states):
            # log-probability of piece v: -v (any fixed table would do); the masked row's states are ignored
            return -torch.arange(20, dtype=torch.float).expand(len(states), -1)

    class Encoding(dict):
        offsets = ([(0, 0), (0, 2), (2, 4), (0, 0)], [(0, 0), (0, 3), (0, 0), (0, 0)])

    class Tok:
        mask_id, pad_id = 19, 1

        def __call__(self, texts, return_tensors=None):
            return Encoding(input_ids=[[0, 11, 12, 2], [0, 13, 2, 1]], attention_mask=[[1, 1, 1, 1], [1, 1, 1, 0]])

    scores = statement_scores(Model(), Tok(), ["abcd", "xyz"], batch_size=2)
    assert scores == [-(11 + 12), -13.0]
    assert [0, 19, 19, 2] in seen and [0, 11, 19, 2] in seen and [0, 19, 2] in seen


def test_accuracy_per_relation_argmax_over_the_answer_space():
    rel = BearRelation(
        "P30", "[X] is in [Y].", ["Asia", "Europe"], instances=[{"obj_label": "Asia"}, {"obj_label": "Europe"}]
    )
    row = score_choices(rel, [[-3.0, -5.0], [-2.0, -2.0]])  # the tie goes to the first answer: wrong
    assert row == {"instances": 2, "answers": 2, "correct": 1, "accuracy": 0.5}


def test_statements_are_filled_in_one_pass_and_capitalised_as_lm_pub_quiz_does():
    from probes.bear import fill_statement

    assert fill_statement("[X] is located in [Y].", "iPhone", "Asia") == "IPhone is located in Asia."
    assert fill_statement("[X] is located in [Y].", "iPhone", "Asia", capitalize=False) == "iPhone is located in Asia."
    # a label holding a placeholder is not filled again
    assert fill_statement("[X] is in [Y].", "the [Y] band", "Asia") == "The [Y] band is in Asia."


def test_eval_bear_scores_the_statements_lm_pub_quiz_writes(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import probes.bear as bear

    folder = write_bear(tmp_path / "BEAR")
    meta = json.loads((folder / "metadata_relations.json").read_text(encoding="utf-8"))
    meta["P30"]["templates"][0] = "in short, [X] is located in [Y]."
    (folder / "metadata_relations.json").write_text(json.dumps(meta), encoding="utf-8")
    seen = []

    def scores(model, tokenizer, texts, batch_size=64):
        seen.extend(texts)
        return [float(len(t)) for t in texts]

    monkeypatch.setattr(bear, "statement_scores", scores)
    monkeypatch.setattr("mluke.opening.open_model", lambda model, **kw: SimpleNamespace(model=None, tokenizer=None))
    bear.eval_bear(folder, relations=["P30"])
    assert seen[0] == "In short, Japan is located in Asia." and len(seen) == 6
    seen.clear()
    bear.eval_bear(folder, relations=["P30"], capitalize=False)
    assert seen[0] == "in short, Japan is located in Asia."
