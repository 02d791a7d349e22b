"""Counting a corpus's words for vocabulary learning (vocab/learn_vocab.py).

The words are BasicTokenizer's tokens, what WordPiece is later applied to,
made by the tokenizer's compiled kernel stopped before WordPiece
(data_prep/compiled_tokenization.py, `basic_tokens_text`), which gives the
same tokens (tests/test_learn_vocab.py).
"""

import collections
import time

from absl import logging

from data_prep import compiled_tokenization
from plumbing import files
from plumbing import text_io

_COUNT_BATCH = 10000  # Lines per call of the compiled tokenizer.


def file_token_counts(path, do_lower_case):
  """One file's (basic token, count) pairs, a batch of lines per call of
  the kernel (Beam's unit of work is this function on one file)."""
  basic = compiled_tokenization.basic_tokenizer(do_lower_case)
  counts = collections.Counter()
  start = last_log = time.time()
  size = 0
  lines = []
  for _, line in text_io.iter_text_lines(path, errors="ignore"):
    size += len(line) + 1
    lines.append(line)
    if len(lines) == _COUNT_BATCH:
      counts.update(basic.basic_tokens_text(lines).split())
      lines = []
      if time.time() - last_log > 10.0:
        logging.info("%s: counted %.1f MB (%.1f MB/s).", path, size / 1e6,
                     size / 1e6 / (time.time() - start))
        last_log = time.time()
  counts.update(basic.basic_tokens_text(lines).split())
  return counts.items()


def count_words(input_files, do_lower_case):
  """Counts the basic tokens of the corpus (what WordPiece will be applied to)."""
  counts = collections.Counter()
  for path in input_files:
    counts.update(dict(file_token_counts(path, do_lower_case)))
  size = sum(files.file_size(p) for p in input_files)
  logging.info("%d distinct words in %.1f MB.", len(counts), size / 1e6)
  return counts
