"""The typer options that several commands share, declared once so that their flags and help read the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

#: ``--overwrite`` of every command that writes result files.
OverwriteOption = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Replace output files (--json, --csv, --jsonl) that already exist; without it an existing "
        "file is kept and the command stops before doing any work.",
    ),
]


#: ``--device`` / ``--dtype`` of every command that runs a model (see :mod:`mluke.models.devices`).
DeviceOption = Annotated[
    str | None,
    typer.Option(
        "--device",
        help="Where the model runs: 'cpu', 'cuda', 'cuda:N' or 'auto' (a GPU when there is one). Default: the CPU.",
    ),
]
DtypeOption = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="Precision of the model: 'fp32' (default), 'bf16' (faster on GPUs and CPUs with bf16 instructions), "
        "'fp16' (GPUs) or 'int8' (CPUs: docs/guides/devices.md#int8-on-the-cpu).",
    ),
]
#: ``--dtype`` of the training commands, hidden: refused with what to use instead (:func:`checks.training_dtype`).
TrainDtypeOption = Annotated[
    str | None, typer.Option("--dtype", hidden=True, help="Not for training: see the inference commands.")
]

#: ``--progress/--no-progress`` of every command that shows a progress bar.
ProgressOption = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")]

#: ``--db`` of the commands that read one entity database.
DbOption = Annotated[Path | None, typer.Option("--db", help="Entity database (default: the embedded kb).")]

#: ``--kb NAME=DB`` of the commands that use a KnowBert model: a knowledge base's kb instead of the recorded one.
KnowBertKbOption = Annotated[
    list[str] | None,
    typer.Option(
        "--kb",
        help="KnowBert --model: NAME=DB, knowledge base NAME's kb, not the recorded one (repeatable).",
    ),
]

#: ``--model`` of the commands whose default is the embedded demo model.
ModelOption = Annotated[
    str | None, typer.Option(help="Checkpoint folder or hub name, or 'demo' (the default): the embedded demo model.")
]

#: ``--knowledge/--no-knowledge``: a KnowBert model's knowledge layer on or off (P@1 with and without it)
KnowledgeOption = Annotated[
    bool,
    typer.Option(
        "--knowledge/--no-knowledge",
        help="KnowBert --model: its knowledge layer over the prompts' kb mentions, or the bare encoder.",
    ),
]

#: How ``mluke link`` and ``mluke distributed link`` decide: the method and its settings (:class:`mluke.LinkOptions`).
LinkMethodOption = Annotated[
    str,
    typer.Option(
        "--method",
        help=(
            "'combined' (model + prior), 'prior', 'model', 'global' (combined, resolving mentions one by one "
            "and feeding each resolved entity back in as context), or 'knowbert' (the integrated linker of a "
            "KnowBert model, with NULL; --model: the folder 'mluke knowbert train' writes, RUN/model)."
        ),
    ),
]
PriorWeightOption = Annotated[
    float,
    typer.Option(
        "--prior-weight",
        help="Weight of log p(entity | mention) next to the model's log-probability in 'combined' and 'global'.",
    ),
]
NilThresholdOption = Annotated[
    float | None,
    typer.Option(
        "--nil-threshold",
        help=(
            "Mentions whose confidence (0 to 1) is below this are NIL (default: the calibrated threshold, see "
            "docs/guides/linking.md#confidence-and-nil)."
        ),
    ),
]
CandidatesOption = Annotated[
    bool,
    typer.Option(
        "--candidates",
        help="Show the runner-up candidates in the table and include every candidate's scores in the JSONL output.",
    ),
]

#: ``--model`` of the benchmark commands that take any masked LM and put several side by side.
MaskedLMsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        help="mLUKE checkpoint or any Hugging Face masked LM (BERT, XLM-R, ...), as a folder or hub name, or 'demo' "
        "(the default): the embedded demo model; repeat to compare models side by side.",
    ),
]
