"""Linking a corpus (:func:`mluke.linking.corpus.link_corpus`, ``mluke link CORPUS --jsonl OUT --workers N``):
the output of ``mluke link --jsonl`` in input order, whatever the number of workers, and resumable after
``kill -9`` or Ctrl-C into the same bytes."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kb.errors import InputFormatError, OptionError, OutputExistsError
from mluke.linking.corpus import link_corpus
from mluke.linking.documents import Document, corpus_format, iter_chunks, iter_documents
from mluke.linking.files import iter_link_file, write_linked
from mluke.linking.linker import Linker
from mluke.linking.resume import identity, resume
from mluke.options import LinkOptions

#: Small chunks, so that a short corpus makes many of them (and a run can be stopped between two).
SMALL = {"chunk_texts": 3, "chunk_chars": 400}


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    return Linker(tiny_demo, embedded_db, languages=["en"])


@pytest.fixture(scope="module")
def texts(embedded_db):
    """Sentences with mentions, an empty line, a line without mentions, and one long line (linked alone)."""
    facts = list(embedded_db.facts(property="P36"))[:12]
    labels = embedded_db.labels(sorted({k for f in facts for k in (f.subject, f.object)}), "en")
    filled = [
        embedded_db.template("P36", "en").fill(labels[f.subject], labels[f.object])
        for f in facts
        if f.subject in labels and f.object in labels
    ]
    assert len(filled) >= 8
    return [*filled[:4], "", "Nothing to see here.", " ".join(filled * 6), *filled[4:]]


@pytest.fixture
def corpus(tmp_path, texts):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return path


def today(linker, source, dest, **options):
    """What ``mluke link SOURCE --jsonl DEST`` writes."""
    write_linked(iter_link_file(source, "en", linker=linker, progress=False, **options), dest)
    return dest.read_bytes()


def test_workers_give_the_bytes_of_mluke_link_jsonl(linker, corpus, tmp_path):
    expected = today(linker, corpus, tmp_path / "today.jsonl", **SMALL)
    one = link_corpus(corpus, tmp_path / "one.jsonl", linker=linker, progress=False, **SMALL)
    two = link_corpus(corpus, tmp_path / "two.jsonl", linker=linker, workers=2, progress=False, **SMALL)
    assert (tmp_path / "one.jsonl").read_bytes() == expected
    assert (tmp_path / "two.jsonl").read_bytes() == expected
    assert one.tally.summary() == two.tally.summary()
    assert one.tally.mentions > 10 and one.documents == two.documents == expected.count(b"\n")
    assert not list(tmp_path.glob("*.partial*"))  # the progress files go once the output is complete


def test_jsonl_corpus_keeps_ids_languages_and_order(linker, texts, tmp_path):
    source = tmp_path / "corpus.jsonl"
    docs = [{"id": f"doc-{k}", "text": t} for k, t in enumerate(texts)]
    docs[2]["lang"] = "en"
    lines = [json.dumps(d) + "\n" for d in docs]
    source.write_text("".join(lines[:3]) + "\n" + "".join(lines[3:]))
    assert corpus_format(source) == "jsonl"
    link_corpus(source, tmp_path / "out.jsonl", linker=linker, workers=2, progress=False, **SMALL)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [d["id"] for d in docs]
    assert [r["text"] for r in rows] == texts
    assert rows[2]["lang"] == "en" and "lang" not in rows[0]
    assert rows[3]["line"] == 5  # the line number in the file (a blank line before it)
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    link_corpus(plain, tmp_path / "plain.jsonl", linker=linker, progress=False, **SMALL)
    for row, same in zip(rows, (json.loads(line) for line in (tmp_path / "plain.jsonl").read_text().splitlines())):
        assert row["mentions"] == same["mentions"]


def test_bad_jsonl_line_is_named(tmp_path):
    source = tmp_path / "corpus.jsonl"
    source.write_text('{"id": 1, "text": "Paris."}\n{"id": 2, "txt": "Tokyo."}\n')
    with pytest.raises(InputFormatError, match=r"corpus.jsonl, line 2: no \"text\" string"):
        list(iter_documents(source, "en"))


def test_chunks_follow_the_streams_rule(texts):
    options = LinkOptions(**SMALL)
    chunks = list(iter_chunks([Document(k + 1, t, "en") for k, t in enumerate(texts)], options))
    assert sum(len(c.documents) for c in chunks) == len(texts)
    for c in chunks:
        assert len(c.documents) <= 3 and (len(c.documents) == 1 or sum(len(d.text) for d in c.documents) <= 400)
    assert any(len(c.documents) == 1 and len(c.documents[0].text) > 400 for c in chunks)  # the long text, alone
    assert [c.start for c in chunks] == [sum(len(d.documents) for d in chunks[:k]) for k in range(len(chunks))]


def test_resume_after_a_torn_write_and_refusal_of_another_input(linker, corpus, tmp_path):
    dest = tmp_path / "out.jsonl"
    expected = today(linker, corpus, tmp_path / "today.jsonl", **SMALL)
    link_corpus(corpus, dest, linker=linker, progress=False, **SMALL)
    # what a run killed in the middle leaves: the sidecar and four lines and a half
    partial, sidecar = tmp_path / "out.jsonl.partial", tmp_path / "out.jsonl.partial.json"
    lines = expected.splitlines(keepends=True)
    dest.unlink()
    _leave_progress(linker, corpus, dest)
    partial.write_bytes(b"".join(lines[:4]) + lines[4][:7])
    run = link_corpus(corpus, dest, linker=linker, workers=2, progress=False, **SMALL)
    assert dest.read_bytes() == expected
    assert run.resumed == 3  # back to the end of the first complete chunk
    assert not partial.exists() and not sidecar.exists()
    # another input, or other options: refused, until --overwrite
    dest.unlink()
    _leave_progress(linker, corpus, dest)
    with pytest.raises(OutputExistsError, match="another input or other settings"):
        link_corpus(corpus, dest, linker=linker, progress=False, chunk_texts=2, chunk_chars=400)
    corpus.write_text(corpus.read_text() + "Paris.\n")
    with pytest.raises(OutputExistsError, match="overwrite"):
        link_corpus(corpus, dest, linker=linker, progress=False, **SMALL)
    link_corpus(corpus, dest, linker=linker, progress=False, overwrite=True, **SMALL)
    assert dest.read_bytes().count(b"\n") == len(lines) + 1


def _leave_progress(linker, corpus, dest):
    """The sidecar of a run over ``corpus`` and an empty partial file: a run stopped before its first chunk."""
    options = LinkOptions(**SMALL)
    sidecar = identity(corpus, "en", "text", options, None, None, linker)
    resume(dest, sidecar, False, corpus, "en", "text", options)


SCRIPT = textwrap.dedent(
    """
    import sys
    from mluke.linking.corpus import link_corpus
    link_corpus(sys.argv[1], sys.argv[2], model=sys.argv[3], db=sys.argv[4], workers=int(sys.argv[5]),
                progress=False, chunk_texts=1, chunk_chars=400)
    """
)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_killed_run_resumes_into_the_same_bytes(how, tmp_path, tiny_demo, embedded_db_path, linker, texts):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(t + "\n" for t in (texts[:4] * 60)), encoding="utf-8")
    expected = today(linker, corpus, tmp_path / "today.jsonl", chunk_texts=1, chunk_chars=400)
    dest = tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    args = [sys.executable, "-c", SCRIPT, str(corpus), str(dest), str(tiny_demo), str(embedded_db_path), "2"]
    process = subprocess.Popen(args, env=os.environ.copy(), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        if partial.exists() and partial.stat().st_size > 2000:
            process.send_signal(how)
            break
        time.sleep(0.005)
    _, err = process.communicate(timeout=300)
    assert process.returncode != 0, err.decode()  # stopped before the end
    assert not dest.exists()  # never looks complete
    assert partial.stat().st_size > 0
    assert len(expected) > partial.stat().st_size
    assert not [p for p in tmp_path.glob("out.jsonl*") if p.name.startswith("out.jsonl.") and "-" in p.name[10:]]
    resumed = subprocess.run([*args[:-1], "1"], env=os.environ.copy(), capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert dest.read_bytes() == expected


def test_cli_workers_and_refusals(demo_cli, corpus, tmp_path):
    result = demo_cli("link", corpus, jsonl=tmp_path / "out.jsonl", workers=2, no_progress=True)
    assert result.exit_code == 0, result.output
    assert "2 workers x 1 thread" in result.output
    result = demo_cli("link", corpus, workers=2)
    assert isinstance(result.exception, OptionError) and "--jsonl OUT" in str(result.exception)


def _sleep_and_report(state, seconds):
    time.sleep(seconds)
    return seconds, os.getpid(), time.monotonic()


def test_a_slow_chunk_does_not_keep_the_other_worker_idle():
    """While one worker links a slow chunk, the other goes on with the next ones; results still come in order."""
    from mluke.linking.workers import WorkerPool

    tasks = [2.0] + [0.05] * 12
    with WorkerPool(_sleep_and_report, None, 2) as pool:
        results = list(pool.map(tasks))
    assert [r[0] for r in results] == tasks  # in task order
    slow_pid, slow_end = results[0][1], results[0][2]
    fast = results[1:]
    assert {pid for _, pid, _ in fast} == {next(pid for _, pid, _ in fast if pid != slow_pid)}  # the other worker
    assert max(end for _, _, end in fast) < slow_end  # all done before the slow one: never waited for it
