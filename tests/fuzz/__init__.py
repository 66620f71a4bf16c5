"""Property-based fuzzing (hypothesis) of the text-processing code and the dataset readers.

The hypothesis profiles ("ci", the default, and "long") are registered in ``conftest.py``;
run ``HYPOTHESIS_PROFILE=long pytest tests/fuzz`` for many more examples.
"""
