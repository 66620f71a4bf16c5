"""One policy for every output file, and the text-input reader."""

import pytest

import kb
from kb.errors import flag
from kb.files import (
    atomic_path,
    check_output,
    read_lines,
    split_list,
    write_csv,
    write_json,
    write_jsonl,
)


def test_outputs_create_folders_and_never_replace_silently(tmp_path):
    out = tmp_path / "new" / "deeper" / "r.json"
    write_json({"a": "東京"}, out)  # missing folders are created
    assert out.read_text(encoding="utf-8") == '{\n "a": "東京"\n}\n'
    with pytest.raises(kb.OutputExistsError, match=r"r\.json already exists; pass overwrite=True") as err:
        write_json({"a": 2}, out)
    assert err.value.for_cli().endswith("pass --overwrite to replace it")
    assert "東京" in out.read_text(encoding="utf-8")  # kept
    write_json({"a": 2}, out, overwrite=True)
    assert '"a": 2' in out.read_text(encoding="utf-8")
    write_jsonl([{"x": 1}, {"x": "é"}], tmp_path / "r.jsonl")
    assert (tmp_path / "r.jsonl").read_text(encoding="utf-8") == '{"x": 1}\n{"x": "é"}\n'
    write_csv(["a", "b"], [[1, "x,y"]], tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_bytes() == b'a,b\r\n1,"x,y"\r\n'
    assert not list(tmp_path.rglob("*.partial-*"))


def test_an_interrupted_write_leaves_nothing_and_keeps_the_old_file(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")

    class Stop(Exception):
        pass

    with pytest.raises(Stop), atomic_path(out, overwrite=True) as tmp:
        tmp.write_text("half")
        raise Stop
    assert out.read_text() == "old" and list(tmp_path.iterdir()) == [out]
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "old.bin").write_text("1")
    with atomic_path(folder, overwrite=True) as tmp:
        tmp.mkdir()
        (tmp / "new.bin").write_text("2")
    assert [p.name for p in folder.iterdir()] == ["new.bin"] and sorted(p.name for p in tmp_path.iterdir()) == [
        "model",
        "r.json",
    ]
    assert check_output(tmp_path / "a" / "b.txt") == tmp_path / "a" / "b.txt" and (tmp_path / "a").is_dir()


def test_read_lines_names_the_file_and_the_bad_line(tmp_path):
    good = tmp_path / "in.txt"
    good.write_bytes("\ufeffParis\r\n東京\n".encode())
    assert read_lines(good) == ["Paris", "東京"]
    with pytest.raises(kb.InputFormatError, match=r"missing\.txt: no such file$"):
        read_lines(tmp_path / "missing.txt", pipe_hint="mluke link -")
    with pytest.raises(
        kb.InputFormatError,
        match=r"is not a file: .*pipe it in: echo 'Paris is the capital of France\.' \| mluke link -",
    ):
        read_lines("Paris is the capital of France.", pipe_hint="mluke link -")
    with pytest.raises(kb.InputFormatError, match="echo '東京は日本の首都です。'"):
        read_lines("東京は日本の首都です。", pipe_hint="mluke link -")
    with pytest.raises(kb.InputFormatError, match="is a folder"):
        read_lines(tmp_path)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("ok\nstill ok\nCaf\xe9\n".encode("latin-1"))
    with pytest.raises(kb.InputFormatError, match=r"latin1\.txt, line 3: bytes that are not UTF-8"):
        read_lines(latin1)


def test_comma_lists_and_option_spellings():
    assert split_list(" en, ja,,de ") == ["en", "ja", "de"] and split_list(None) is None and split_list("") == []
    err = kb.MlukeError(
        "x; pass {restart} or {relation}",
        options={"restart": flag("restart"), "relation": kb.errors.option("relation", "P..")},
    )
    assert str(err) == "x; pass restart=True or relation='P..'"
    assert err.for_cli() == "x; pass --restart or --relation P.."
    assert kb.KbFormatError is kb.InputFormatError


def test_one_string_is_one_item_of_a_list_parameter(embedded_db):
    from kb.files import string_list
    from mluke import span_vectors
    from mluke.errors import TextInputError
    from probes import parallel_spans

    assert string_list("Tokyo", "subjects") == ["Tokyo"] and string_list(("a", "b"), "x") == ["a", "b"]
    assert string_list(None, "x") is None
    with pytest.raises(TypeError, match="langs: expected a string or a list of strings, got 3"):
        string_list(["en", 3], "langs")
    assert {item.lang for item in parallel_spans(embedded_db, "ja", size=3)} == {"ja"}
    # checked before any model is opened: the model named here does not exist
    with pytest.raises(TextInputError, match="texts: expected a list of texts, got one string"):
        span_vectors("no-such-model", "Tokyo is big.", [[(0, 5)]])  # type: ignore[arg-type]
