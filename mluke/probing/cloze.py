"""``mluke.probe``: ask an mLUKE model what it knows, with cloze templates.

For a template such as ``"[X] was founded in [Y]"`` every subject is put at
[X] and the model answers at [Y]:

- **typed querying** (as in the mLUKE paper): the relation's candidate objects
  (its objects in the kb, or ``candidates=``) are ranked;
- **open vocabulary**: with no candidates given and none in the kb for the
  relation, the model's whole entity vocabulary is ranked (its top-k, with
  labels in the query language, else English, else the vocabulary's title).

Modes:

- ``mode="entity"`` (the default for mLUKE checkpoints): one word ``<mask>`` at [Y] with the entity [MASK]
  over it; candidates are ranked by their MEP log-probability, computed for the
  candidates only (or, open vocabulary, in one chunked pass over the entity
  table). Candidates outside the entity vocabulary fall back to the word score
  below, flagged ``source="word"``. By default the subject's entity is also given
  over [X] wherever the subject is in the entity vocabulary (the paper's
  "[X] & [Y]" prompts, its best setting); ``use_subject_entity=False`` asks with
  [Y] only. One forward pass per subject.
- ``mode="word"``: mLAMA's typed querying: a candidate of n pieces is scored by
  the mean log-probability of its pieces at n ``<mask>`` positions; one forward
  pass per subject and candidate length. Open vocabulary: answers of 1..``max_pieces`` word pieces
  decoded as X-FACTR does (``decoding``: independent, left-to-right or confidence-order filling, with
  a ``beam``), ranked across lengths by their mean piece log-probability (:mod:`mluke.probing.decoding`).
- ``mode="both"``: both rankings (``result.modes``).
- ``mode=None`` (default): entity mode for an mLUKE checkpoint, word mode for any other masked LM.

Models: an mLUKE checkpoint (all modes), or any Hugging Face masked LM (BERT, mBERT, XLM-R,
RoBERTa, DistilBERT, English LUKE, ...; folder or hub name, see :mod:`mluke.models.word_models`) in word mode.

Object sets (``threshold``): instead of the ``top_k``, every candidate whose probability (``exp`` of
its score, see below) is at least ``threshold`` is the answer, possibly none; the result's metrics
add precision, recall and F1 against all true objects of each kb subject (:mod:`mluke.object_sets`).

Scores (``normalize``) - the ranking is the same either way:

- ``"candidates"`` (default): log-probabilities over the candidate set,
  ``log p(c) - log sum_c' p(c')``, which sum to one over the candidates of a
  subject. With every candidate scored by entity, the full-vocabulary
  normaliser cancels out and is never computed (n x c dot products only).
  Word-scored candidates count with ``p(c) = exp(mean piece log-probability)``.
- ``"vocabulary"``: the model's own log-probabilities: MEP normalised over the
  whole entity vocabulary (one pass over the entity table per 128 prompts), and
  the mean piece log-probability over the word vocabulary. Open-vocabulary
  answers are always these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb import open_db
from kb.db import EntityDB
from kb.db.relations import describe, match_relation, no_match_error
from kb.db.templates import read_templates
from kb.errors import MlukeError, Option, option
from kb.files import string_list
from kb.languages import check_language
from kb.renamed import renamed_keyword
from mluke.options import ProbeOptions, merge_options
from mluke.results import ProbeResult

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.models.checkpoint import Mluke
    from mluke.models.devices import Device, DType
    from mluke.options import ProbeKeywords


@renamed_keyword("kb", "db")
def probe(
    template: str,
    lang: str = "en",
    *,
    subjects: str | Sequence[str] | None = None,
    candidates: str | Sequence[str] | None = None,
    relation: str | None = None,
    templates: Mapping[tuple[str, str], str] | str | os.PathLike[str] | None = None,
    model: Mluke | str | os.PathLike[str] | None = None,
    db: EntityDB | str | os.PathLike[str] | None = None,
    options: ProbeOptions | None = None,
    device: Device = None,
    dtype: DType = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
    **keywords: Unpack[ProbeKeywords],
) -> ProbeResult:
    """Ask the model for the object of each subject of a cloze template (see :mod:`mluke.probing.cloze`).

    The relation is matched through the kb's templates unless given: exactly in any language, else the
    closest template of ``lang`` or English (the notes say which relation was assumed). An English
    template with ``lang="ja"`` uses the Japanese template and labels.

    Args:
        template: exactly one [X] and one [Y], in any order and script.
        lang: the language of the prompts and labels.
        subjects: labels in ``lang``, entity keys, or free text in no kb (asked with words only); one string is
            one subject; default: every subject with facts under the relation.
        candidates: labels or keys (one string: one candidate); default: the relation's objects in the kb,
            else the whole entity vocabulary (open vocabulary).
        relation: a Wikidata property id, when the template is not one of the kb's.
        templates: more templates for this call, ``{(pid, lang): text}`` or mLAMA's
            ``templates.jsonl`` files (a file or folder).
        model: a loaded :func:`mluke.load` bundle, a folder or hub name of an mLUKE checkpoint or of any
            masked LM (word mode); default: the embedded demo model (trained on first use).
        db: an :class:`kb.EntityDB` or its path; default: the embedded kb (``kb=``: deprecated).
        options: how to ask and answer (:class:`mluke.ProbeOptions`: ``mode``, ``top_k``,
            ``threshold``, ...); or give its fields as keywords (``top_k=3``).
        device: where the model runs (``"auto"``: a GPU when there is one; see :mod:`mluke.models.devices`);
            default: as the model is.
        dtype: the precision it runs in (``"bf16"``, ...).
        kbs: a KnowBert model's knowledge bases' kbs by name (``db`` is the first one's; default: what the model
            records, :func:`mluke.knowbert.kb_dbs`).
        **keywords: the fields of :class:`mluke.ProbeOptions`, when ``options`` is not given.

    Returns:
        A :class:`mluke.ProbeResult`: per subject its predictions, the gold answers and their rank,
        with metrics and notes (``modes`` holds both rankings for ``mode="both"``).

    Raises:
        MlukeError: a bad option, a template that matches no relation, nothing to ask (no subjects or
            candidates with labels in ``lang``), entity mode for a model without an entity vocabulary.
        TypeError: ``options`` and a keyword that differs from it.
    """
    options = merge_options(ProbeOptions, options, keywords, "probe")
    subjects, candidates = string_list(subjects, "subjects"), string_list(candidates, "candidates")
    threshold = options.threshold
    db = open_db(os.fspath(db) if isinstance(db, os.PathLike) else db)
    check_language(lang, db.languages)
    extra = read_templates(templates) if isinstance(templates, (str, os.PathLike)) else dict(templates or {})
    match = match_relation(db, template, lang, relation, extra)
    pid, tpl, notes = match.relation, match.template, match.notes
    if subjects is None:
        if pid is None:
            raise no_match_error(db, template)
        subjects = db.subjects(pid)
        if not subjects:
            raise MlukeError(
                _nothing_to_ask(db, pid, template, model),
                options={"subject": Option("subjects=[...]", "--subject NAME (repeated)"), "db": Option("db=", "--db")},
            )
    subj = _subjects(db, list(subjects), lang, notes)
    if candidates is not None:
        cand_keys = db.resolve_entities(list(candidates), lang, "candidate")
    else:
        cand_keys = sorted({f.object for f in db.facts(property=pid)}) if pid else []
    gold = {k: set(db.objects(k, pid)) for k, _ in subj if k is not None and pid}
    # the model code (torch, transformers: seconds to import) only once the arguments are known to be good
    from mluke.knowbert.word_model import open_probe_model
    from mluke.probing.runs import resolve_mode, run_cloze, run_open
    from mluke.reuse import BUILT, db_identity, dbs_identity, model_identity

    key = (
        "probe",
        model_identity(model),
        db_identity(db),
        options.knowledge,
        str(device),
        str(dtype),
        dbs_identity(kbs),
    )
    bundle = BUILT.get(
        key, lambda: open_probe_model(model, db=db, knowledge=options.knowledge, device=device, dtype=dtype, kbs=kbs)
    )
    if getattr(bundle.tokenizer, "reads_language", False):  # a loaded KnowBert bundle: prompts' spans from this kb
        cast(Any, bundle.tokenizer).prepare(db=db, kbs=kbs, knowledge=options.knowledge)
    mode = resolve_mode(options.mode, bundle)
    if not cand_keys:
        if threshold is not None:
            raise MlukeError(
                "{threshold} picks answers among candidates, and this relation has none in the kb; give {candidates}",
                options={
                    "threshold": option("threshold", threshold),
                    "candidates": Option("candidates=[...]", "--candidate NAME"),
                },
            )
        what = {
            "entity": "the model's whole entity vocabulary",
            "word": f"words of 1-{options.max_pieces} pieces decoded ({options.decoding}, beam {options.beam})",
        }
        notes.append(
            f"{describe(db, pid) if pid else 'this relation'} has no objects in the kb: answers are "
            + " and ".join(what[m] for m in (("entity", "word") if mode == "both" else (mode,)))
        )
        return run_open(
            tpl,
            lang,
            subj,
            gold,
            model=bundle,
            options=options,
            relation=pid,
            notes=notes,
            labels=lambda keys: _labels(db, keys, lang),
        )
    cand_labels = db.labels(cand_keys, lang)
    dropped = [k for k in cand_keys if k not in cand_labels]
    if dropped:
        notes.append(f"{len(dropped)} candidate(s) without a {lang!r} label left out")
    cand_keys = list(dict.fromkeys(k for k in cand_keys if k in cand_labels))
    if not cand_keys:
        raise MlukeError(
            f"nothing to probe: no candidate{f' under {describe(db, pid)}' if pid else ''} has a "
            f"{lang!r} label in {db.path}"
        )
    return run_cloze(
        tpl,
        lang,
        subj,
        [(k, cand_labels[k]) for k in cand_keys],
        gold,
        model=bundle,
        options=options,
        relation=pid,
        notes=notes,
        gold_labels=cand_labels,
    )


def _subjects(db: EntityDB, items: list[str], lang: str, notes: list[str]) -> list[tuple[str | None, str]]:
    """(key, label in ``lang``) per subject: kb entities by key or name; free text in no kb keeps its words
    (key ``None``); a kb entity without a ``lang`` label is skipped (counted in the notes)."""
    keys = db.find_entities(items, lang)
    labels = db.labels([k for k in keys if k is not None], lang)
    out: list[tuple[str | None, str]] = []
    missing = 0
    for item, key in zip(items, keys):
        if key is None:
            out.append((None, item))
        elif key in labels:
            out.append((key, labels[key]))
        else:
            missing += 1
    if missing:
        notes.append(f"{missing} subject(s) without a {lang!r} label skipped")
    unknown = [label for key, label in out if key is None]
    if unknown:
        notes.append(
            f"{len(unknown)} subject(s) in no kb, asked with their words only: "
            + ", ".join(map(repr, unknown[:5]))
            + (" ..." if len(unknown) > 5 else "")
        )
    if not out:
        raise MlukeError(f"nothing to probe: no subject has a {lang!r} label in {db.path}")
    return out


def _nothing_to_ask(db: EntityDB, pid: str, template: str, model: Mluke | str | os.PathLike[str] | None) -> str:
    """The one sentence for a recognised relation the kb has no subjects for: what to do instead."""
    if model is None or model == "demo":  # mluke.opening.is_demo
        model_name = "the embedded demo model"
    elif isinstance(model, (str, Path)):
        model_name = f"the model {model}"
    else:
        source = getattr(getattr(model, "tokenizer", None), "source_dir", None)
        model_name = f"the model from {source}" if source else "the given model"
    return (
        f"{template!r} asks about {describe(db, pid)}, but this kb ({db.path}) has no subjects for it, so there "
        f"is nothing to ask {model_name} about. Name your own subjects with {{subject}}, or build a kb from the "
        f"Wikidata and Wikipedia dumps (mluke kb build --wikidata latest-all.json.bz2 ... -o kb.sqlite) and use "
        "it with {db}."
    )


def _labels(db: EntityDB, keys: list[str | None], lang: str) -> list[str | None]:
    """Labels of entity keys in ``lang``, else English (``None`` where neither exists)."""
    known = [k for k in keys if k is not None]
    local, english = db.labels(known, lang), db.labels(known, "en")
    return [None if k is None else local.get(k) or english.get(k) for k in keys]
