"""``mluke link`` as a stream: the same output as linking everything at once, in memory that does not
grow with the input, and no output file at the final path when a run fails or is interrupted."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import kb
from kb.files import iter_lines
from mluke.linking.files import iter_link_file, write_linked
from mluke.linking.linker import Linker
from mluke.results import LinkedMention, LinkedTexts

PARIS = "geonames:2988507"


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    return Linker(tiny_demo, embedded_db, languages=["en"])


@pytest.fixture(scope="module")
def lines(embedded_db, linker):
    """Sentences about cities and countries the demo model knows, an empty line, a line without
    mentions, and one long line."""
    vocab = linker.bundle.entity_vocab
    facts = [
        f for pid in ("P17", "P36") for f in embedded_db.facts(property=pid) if vocab.id_of_key(f.subject) is not None
    ]
    labels = embedded_db.labels(sorted({k for f in facts for k in (f.subject, f.object)}), "en")
    texts = [
        embedded_db.template(f.property, "en").fill(labels[f.subject], labels[f.object])
        for f in facts
        if f.subject in labels and f.object in labels
    ][:20]
    assert len(texts) == 20
    long = " ".join(texts * 8)  # many windows and mentions
    return [*texts[:5], "", "Nothing to see here.", long, *texts[5:], "Paris, France and Tokyo. Berlin"]


def same(a, b):
    """Equal, floats to 1e-4: other batches of windows pad differently, which may change the last bits of float32."""
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, abs=1e-4)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "to_dict"):
        return same(a.to_dict(), b.to_dict())
    return a == b


def test_stream_gives_the_results_of_one_call(linker, lines):
    scored = [
        any(r["model"] is not None for r in m.candidates)
        for found in linker.link(lines[:5], "en", candidates=True)
        for m in found
    ]
    assert len(scored) >= 10 and all(scored)  # the model scores every mention
    for method in ("combined", "prior", "global"):
        whole = linker.link(lines, "en", method=method, window_chars=200, candidates=True)
        stream = list(
            linker.link_iter(
                lines,
                "en",
                method=method,
                window_chars=200,
                candidates=True,
                chunk_texts=3,
                chunk_chars=500,
                segment_windows=2,
            )
        )
        assert [t for t, _ in stream] == lines
        assert same([list(found) for _, found in stream], whole), method
    assert not same([[1.0]], [[1.001]]) and not same([{"key": "a"}], [{"key": "b"}])


def test_long_text_is_linked_one_segment_at_a_time(linker, lines, monkeypatch):
    long = max(lines, key=len)
    calls = []
    original = Linker._resolve

    def spy(self, texts, mentions, *args, **kw):
        calls.append(len(mentions[0]))
        return original(self, texts, mentions, *args, **kw)

    monkeypatch.setattr(Linker, "_resolve", spy)
    [(text, found)] = linker.link_iter([long], "en", chunk_chars=1000, segment_windows=1, window_chars=300)
    first = next(iter(found))
    assert text is long and len(calls) == 1 and first.start == 0  # the first mention after one segment only
    rest = list(found)
    assert len(calls) >= len(long) // 300 and sum(calls) == len(rest) + 1  # each mention in one segment
    assert list(linker.index.iter_detect(long, "en")) == linker.index.detect(long, "en")


def test_cli_jsonl_equals_the_whole_result(demo_cli, linker, lines, tmp_path):
    many = [t for t in lines if len(t) < 1000] * 12  # over 256 lines: two chunks in the command line
    many[100] = " ".join(lines[:5] * 40)  # over chunk_chars=2000 below: linked alone, in segments
    assert len(many) > 256 and len(many[100]) > 2000
    src = tmp_path / "in.txt"
    src.write_text("\n".join(many) + "\n", encoding="utf-8")
    whole = LinkedTexts(many, linker.link(many, "en"), "en", "combined")
    out = tmp_path / "out.jsonl"
    res = demo_cli("link", src, jsonl=out, no_progress=True)
    assert res.exit_code == 0, res.output
    assert same([json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()], whole.records())
    counts = whole.summary()
    assert f"{counts['mentions']:,}" in res.output and f"{counts['entities']:,}" in res.output
    api = tmp_path / "api.jsonl"
    tally = write_linked(iter_link_file(src, "en", linker=linker, progress=False, chunk_texts=7, chunk_chars=2000), api)
    assert tally.summary() == counts
    streamed = api.read_text(encoding="utf-8").splitlines(keepends=True)
    assert same([json.loads(line) for line in streamed], whole.records())
    first = json.loads(streamed[0])  # in the bytes LinkedTexts.to_jsonl writes
    LinkedTexts([first["text"]], [[LinkedMention(**m) for m in first["mentions"]]], "en", "combined").to_jsonl(
        tmp_path / "one.jsonl"
    )
    assert len(first["mentions"]) == 2 and (tmp_path / "one.jsonl").read_text(encoding="utf-8") == streamed[0]
    res = demo_cli("link", src, limit="3", no_progress=True)  # the table: the first 3 mentions, the rest counted
    assert res.exit_code == 0 and f"and {counts['mentions'] - 3:,} more mentions" in res.output


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".partial-" in p.name)


def test_failed_or_interrupted_run_leaves_no_output(cli, linker, tiny_demo, embedded_db_path, tmp_path, monkeypatch):
    common = ["link", "-", "--model", str(tiny_demo), "--db", str(embedded_db_path), "--no-progress"]
    out = tmp_path / "out.jsonl"
    bad = ("Paris is in France.\n" * 300).encode() + "Caf\xe9\n".encode("latin-1")  # read after a chunk is written
    res = cli(*common, jsonl=out, input=bad)
    assert res.exit_code == 1 and "standard input, line 301: bytes that are not UTF-8" in res.exception.for_cli()
    assert not out.exists() and _leftovers(tmp_path) == []
    out.write_text("old\n")
    res = cli(*common, jsonl=out, overwrite=True, input=bad)
    assert res.exit_code == 1 and out.read_text() == "old\n" and _leftovers(tmp_path) == []  # the old file, intact
    out.unlink()
    calls = []
    original = Linker._resolve

    def interrupted(self, *args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, *args, **kw)

    monkeypatch.setattr(Linker, "_resolve", interrupted)
    res = cli(*common, jsonl=out, input="Paris is in France.\n" * 600)
    assert res.exit_code != 0 and len(calls) == 2 and not out.exists() and _leftovers(tmp_path) == []


def test_interrupted_process_leaves_no_output(tiny_demo, embedded_db_path, tmp_path):
    """Ctrl-C (SIGINT) while ``mluke link - --jsonl OUT`` streams: nothing at OUT, no temporary file left."""
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mluke",
            "link",
            "-",
            "--model",
            str(tiny_demo),
            "--db",
            str(embedded_db_path),
            "--jsonl",
            str(out),
            "--no-progress",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    proc.stdin.write(b"Paris is in France.\n" * 300)  # a chunk to link, then it waits for more
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    while not _leftovers(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _leftovers(tmp_path), proc.stderr.read().decode() if proc.poll() is not None else "no temporary file"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    proc.stdin.close()
    code = proc.wait(60)
    err = proc.stderr.read().decode()
    assert code == 130, err
    assert not out.exists() and _leftovers(tmp_path) == []
    assert re.search(
        rf"interrupted after linking [\d,]+ lines?; nothing was written to {re.escape(str(out))} \(it is written "
        r"only when complete, so no half file is left\); run the command again to link all of standard input",
        err,
    ), err
    assert "Traceback" not in err


def test_iter_lines_reads_lines_as_splitlines_does(tmp_path):
    path = tmp_path / "in.txt"
    text = "\ufeffa\r\nb\rc\n\nd\u2028e\x85f"
    path.write_bytes(text.encode())
    assert list(iter_lines(path)) == text[1:].splitlines()
    path.write_bytes(b"ok\n" + b"x" * 100 + b"\n\xff\n")
    lines = iter_lines(path)
    assert next(lines) == "ok" and next(lines) == "x" * 100  # lazily: the bad line only when it is reached
    with pytest.raises(kb.InputFormatError, match=r"in\.txt, line 3: bytes that are not UTF-8"):
        next(lines)
    with pytest.raises(kb.InputFormatError, match="no such file"):
        iter_lines(tmp_path / "missing.txt")  # checked at once, not at the first line
