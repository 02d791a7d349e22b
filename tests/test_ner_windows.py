"""Each word's tag comes from the window that gives its first piece the most
context: windows whose logits disagree, against the rule written out here
from its definition (the original's SQuAD code: a position's score in a
window is the lesser of its left and right context plus a hundredth of the
window's length; the first window with the highest score wins)."""

import types

import numpy as np
import pytest

from tasks.ner import features


def spans_by_definition(count, max_tokens, stride):
  """(start, length) windows of `count` pieces, a new one every `stride`."""
  spans, start = [], 0
  while start < count:
    length = min(count - start, max_tokens)
    spans.append((start, length))
    if start + length == count:
      break
    start += min(length, stride)
  return spans


def best_window_by_definition(spans, position):
  best, best_score = None, None
  for index, (start, length) in enumerate(spans):
    if not start <= position < start + length:
      continue
    score = min(position - start, start + length - 1 - position) + 0.01 * length
    if best_score is None or score > best_score:
      best, best_score = index, score
  return best


@pytest.mark.parametrize("seed,max_seq_length,doc_stride", [
    (0, 10, 3), (1, 10, 8), (2, 7, 2), (3, 16, 5), (4, 12, 1)])
def test_each_words_tag_comes_from_its_max_context_window(seed, max_seq_length, doc_stride):
  rng = np.random.RandomState(seed)
  piece_counts = rng.randint(1, 4, size=rng.randint(8, 30))
  pieces = [[100 + i] * int(n) for i, n in enumerate(piece_counts)]
  windows = features.windows_of(0, pieces, max_seq_length, doc_stride, cls_id=1, sep_id=2)
  spans = spans_by_definition(int(piece_counts.sum()), max_seq_length - 2, doc_stride)
  assert len(windows) == len(spans) > 1
  labels = len(windows)
  # Window j says "tag j" at every position: the tag a word gets names the
  # window it was read from.
  logits = np.zeros((len(windows), max_seq_length, labels), np.float32)
  for j in range(len(windows)):
    logits[j, :, j] = 5.0
  sentence = types.SimpleNamespace(words=["w%d" % i for i in range(len(pieces))])
  (predicted,) = features.word_predictions([sentence], windows, logits)
  first_piece = np.concatenate([[0], np.cumsum(piece_counts)[:-1]])
  expected = [best_window_by_definition(spans, int(p)) for p in first_piece]
  assert [label for label, _ in predicted] == expected
  assert len(set(expected)) > 1  # The windows did disagree.
