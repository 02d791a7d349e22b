"""Reads pre-training text into flat id arrays.

Input format (as the original): one sentence per line, blank lines between
documents. Lines are stripped with Python's `str.strip()`; a line that is
empty after stripping ends the current document (so several blank lines, or a
line of U+3000, end it too); a line that is not empty but yields no tokens
(say, only control characters) is skipped without ending it. Files do not
end documents: the last document of one file continues into the next unless
a blank line separates them. Empty documents are dropped.
"""

import logging
import time

import numpy as np

from plumbing import stop_request
from plumbing import text_io

_LINES_PER_BATCH = 20000


class Corpus(object):
  """Token ids of every sentence, grouped into documents (see module doc)."""

  def __init__(self, tokens, seg_offsets, doc_offsets):
    self.tokens = tokens
    self.seg_offsets = seg_offsets
    self.doc_offsets = doc_offsets
    self.doc_order = np.arange(self.num_documents, dtype=np.int64)

  @property
  def num_documents(self):
    return len(self.doc_offsets) - 1

  @property
  def num_sentences(self):
    return len(self.seg_offsets) - 1


def _tokenize_batch(lines, tokenizer, num_threads):
  """Returns (ids, ids per line, blank-line flags) for stripped `lines`."""
  flat, splits = tokenizer.tokenize_to_ids_batch(lines, num_threads=num_threads)
  blank = np.fromiter((not line for line in lines), np.bool_, len(lines))
  return flat, np.diff(splits), blank


def _iter_line_batches(input_files, on_invalid_utf8, stats):
  batch = []
  for path in input_files:
    for _, line in text_io.iter_text_lines(path, errors=on_invalid_utf8):
      stats["bytes"] += len(line) + 1
      batch.append(line.strip())
      if len(batch) >= _LINES_PER_BATCH:
        yield batch
        batch = []
  if batch:
    yield batch


def _assemble(parts):
  """Builds a Corpus from per-batch (ids, lengths, blank) parts."""
  if not parts:
    return Corpus(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64))
  tokens = np.concatenate([p[0] for p in parts])
  lengths = np.concatenate([p[1] for p in parts])
  blank = np.concatenate([p[2] for p in parts])
  # Document number of each line: how many blank lines came before it.
  doc_of_line = np.cumsum(blank)
  kept = lengths > 0
  seg_lengths = lengths[kept]
  seg_docs = doc_of_line[kept]
  seg_offsets = np.zeros(len(seg_lengths) + 1, np.int64)
  np.cumsum(seg_lengths, out=seg_offsets[1:])
  # Documents that kept at least one sentence, in order; their first sentence.
  starts = np.flatnonzero(np.r_[True, seg_docs[1:] != seg_docs[:-1]]) if len(seg_docs) else np.zeros(0, np.int64)
  doc_offsets = np.append(starts, len(seg_docs)).astype(np.int64)
  return Corpus(tokens, seg_offsets, doc_offsets)


def read_corpus(input_files, tokenizer, num_workers=1, on_invalid_utf8="strict",
                log_every_seconds=10.0):
  """Reads and tokenizes `input_files` into a Corpus (original document order).
  Tokenization is compiled code that runs without the GIL: `num_workers`
  threads share each batch of lines."""
  stats = {"bytes": 0}
  parts = []
  start = last_log = time.time()

  def log(final=False):
    elapsed = max(time.time() - start, 1e-9)
    logging.info("%s %.1f MB of text (%.1f MB/s), %d sentences.",
                 "Read" if final else "Reading:", stats["bytes"] / 1e6,
                 stats["bytes"] / 1e6 / elapsed, sum(int((p[1] > 0).sum()) for p in parts))

  for batch in _iter_line_batches(input_files, on_invalid_utf8, stats):
    parts.append(_tokenize_batch(batch, tokenizer, num_workers))
    stop_request.check("while reading the input text")
    if time.time() - last_log >= log_every_seconds:
      log()
      last_log = time.time()
  log(final=True)
  return _assemble(parts)
