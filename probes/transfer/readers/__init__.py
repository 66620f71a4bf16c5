"""Readers and writers of the transfer data sets, one module per family.

- :mod:`~probes.transfer.readers.ner` — CoNLL-2002/2003 and WikiANN (:func:`read_ner`, :func:`write_conll`),
  with the tagging schemes in :mod:`~probes.transfer.readers.ner_tags`;
- :mod:`~probes.transfer.readers.relations` — KBP37 and RELX (:func:`read_re`, :func:`write_kbp37`);
- :mod:`~probes.transfer.readers.qa` — SQuAD, XQuAD and MLQA (:func:`read_squad`, :func:`read_xquad`,
  :func:`read_mlqa`, :func:`write_squad`);
- :mod:`~probes.transfer.readers.tacred` — TACRED's JSON layout (:func:`read_tacred`, :func:`write_tacred`), into
  the examples of :mod:`~probes.transfer.readers.relations`;
- :mod:`~probes.transfer.readers.typing` — Open Entity (:func:`read_typing`, :func:`write_typing`);
- :mod:`~probes.transfer.readers.record` — ReCoRD, original JSON and SuperGLUE JSON lines (:func:`read_record`,
  :func:`write_record`).
"""

from probes.transfer.readers.ner import NerDataset, NerSentence, read_ner, write_conll
from probes.transfer.readers.qa import QaDataset, QaExample, read_mlqa, read_squad, read_xquad, write_squad
from probes.transfer.readers.record import RecordDataset, RecordExample, read_record, write_record
from probes.transfer.readers.relations import ReDataset, ReExample, read_re, write_kbp37
from probes.transfer.readers.tacred import read_tacred, write_tacred
from probes.transfer.readers.typing import TypingDataset, TypingExample, read_typing, write_typing

__all__ = [
    "NerDataset",
    "NerSentence",
    "QaDataset",
    "QaExample",
    "ReDataset",
    "ReExample",
    "RecordDataset",
    "RecordExample",
    "TypingDataset",
    "TypingExample",
    "read_mlqa",
    "read_ner",
    "read_re",
    "read_record",
    "read_squad",
    "read_tacred",
    "read_typing",
    "read_xquad",
    "write_conll",
    "write_kbp37",
    "write_record",
    "write_squad",
    "write_tacred",
    "write_typing",
]
