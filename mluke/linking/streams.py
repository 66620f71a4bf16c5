"""The streaming side of :class:`mluke.Linker` (what :meth:`mluke.Linker.link_iter` runs): a stream of texts
linked in memory that does not grow with it (chunks of texts; a long text in segments of windows)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from kb.db import EntityDB
from kb.errors import TextInputError
from kb.mentions import MentionIndex
from mluke.linking.heap import trim_heap
from mluke.linking.scoring import iter_windows
from mluke.options import LinkOptions
from mluke.results import LinkedMention

#: Segments of a long text between two returns of freed memory to the system (:func:`mluke.linking.heap.trim_heap`).
TRIM_EVERY = 4


class StreamMixin:
    """Linking streams of texts; mixed into :class:`mluke.Linker`, which provides the kb, the mention index
    and the linking of a batch of texts (``_resolve``)."""

    db: EntityDB
    index: MentionIndex

    #: links a batch: (texts, mentions, lang, options, progress, windows) -> linked mentions per text
    _resolve: Callable[..., list[list[LinkedMention]]]

    def _stream(
        self, texts: Iterator[str], lang: str, options: LinkOptions, advance: Callable[[int], object]
    ) -> Iterator[tuple[str, Iterable[LinkedMention]]]:
        chunk: list[str] = []
        size = 0
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TextInputError(
                    f"link() takes a text (str) or a list of texts; item {row} is {type(text).__name__}"
                )
            long = len(text) > options.chunk_chars
            if chunk and (long or len(chunk) == options.chunk_texts or size + len(text) > options.chunk_chars):
                yield from zip(chunk, self._resolve(chunk, self.index.detect_batch(chunk, lang), lang, options))
                advance(size)
                chunk, size = [], 0
            if long:
                yield text, self._segments(text, lang, options, advance)
            else:
                chunk.append(text)
                size += len(text)
        if chunk:
            yield from zip(chunk, self._resolve(chunk, self.index.detect_batch(chunk, lang), lang, options))
            advance(size)

    def _segments(
        self, text: str, lang: str, options: LinkOptions, advance: Callable[[int], object]
    ) -> Iterator[LinkedMention]:
        """The linked mentions of one long text, ``options.segment_windows`` windows at a time.

        The windows are those :meth:`link` cuts and the mentions those it detects
        (in order, chunk by chunk); a segment takes the mentions that start in it,
        and one that runs past its end runs past its last window too, so it keeps
        its prior only either way.
        """
        found = self.index.iter_detect(text, lang)
        pending = next(found, None)
        windows = iter_windows(text, options.window_chars)
        done = segments = 0
        while group := list(islice(windows, options.segment_windows)):
            end, part = group[-1][1], []
            while pending is not None and pending.start < end:
                part.append(pending)
                pending = next(found, None)
            yield from self._resolve([text], [part], lang, options, windows=[group])[0]
            advance(end - done)
            done, segments = end, segments + 1
            if segments % TRIM_EVERY == 0:
                trim_heap()


def ignore_progress(_: int) -> None:
    """No progress bar: the ``advance`` of a stream nobody watches."""
