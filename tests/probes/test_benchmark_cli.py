"""``mluke eval-lmkbc``, ``eval-aida``, ``eval-xfactr`` and ``eval-bear`` on the command line: scores, JSON output and
the cheap refusals."""

import json

from kb.errors import MlukeError
from tests.probes.test_lmkbc import GOLD, PREDICTED


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_lmkbc_prints_the_table_and_writes_json(cli, tmp_path):
    gold, pred = _jsonl(tmp_path / "gold.jsonl", GOLD), _jsonl(tmp_path / "pred.jsonl", PREDICTED)
    result = cli("eval-lmkbc", gold, pred)
    assert result.exit_code == 0, result.output
    assert "countryLandBordersCountry" in result.output and "All Relations" in result.output
    out = tmp_path / "scores.json"
    assert cli("eval-lmkbc", gold, pred, json=out).exit_code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert abs(data["relations"]["*** All Relations ***"]["macro-f1"] - (2 / 3) / 3) < 1e-9


def test_missing_inputs_and_bad_options_are_refused(cli, tmp_path):
    missing = tmp_path / "missing"
    for args, message in [
        (["eval-lmkbc", missing, missing], "GOLD"),
        (["eval-aida", missing], "FILE"),
        (["eval-xfactr", missing], "X-FACTR's repository"),
        (["eval-bear", missing], "a BEAR dataset folder"),
    ]:
        result = cli(*args)
        assert isinstance(result.exception, MlukeError), result.output
        said = result.exception.for_cli()
        assert message in said and "no such" in said, said
    aida = tmp_path / "aida.tsv"
    aida.write_text("-DOCSTART- (1 EU)\nEU\n", encoding="utf-8")
    result = cli("eval-aida", aida, split="dev")
    assert isinstance(result.exception, MlukeError) and "--split" in result.exception.for_cli()
