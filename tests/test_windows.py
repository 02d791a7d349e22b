"""Windows over token sequences (tasks/sliding_windows.py) against the rule
written out here from its definition, and the TensorFlow ops of the exports
(serving/window_ops.py) against the Python, window by window and token by
token.

The rule (the original run_squad.py's doc_stride and max context): windows of
at most `window_length` tokens start at 0 and then every `stride` tokens (a
stride past a window's length steps one window: no token is skipped) until a
window reaches the end; a token held by several windows belongs to the one
where min(tokens before it, tokens after it) + 0.01 x the window's length is
highest, the earlier one on a tie.
"""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from serving import window_ops
from tasks import sliding_windows


def windows_by_definition(num_tokens, window_length, stride, max_windows=None):
  """(start, end) windows, the original's loop: a window ends where the
  tokens or its length do; the next starts a stride (at most a window) on."""
  windows, start = [], 0
  while start < num_tokens and len(windows) != max_windows:
    length = min(num_tokens - start, window_length)
    windows.append((start, start + length))
    if start + length == num_tokens:
      break
    start += min(length, stride)
  return windows


def best_window_by_definition(windows, position):
  """Of the windows holding `position`, the first with the strictly highest score."""
  best, best_score = -1, None
  for index, (start, end) in enumerate(windows):
    if start <= position < end:
      score = min(position - start, end - 1 - position) + 0.01 * (end - start)
      if best_score is None or score > best_score:
        best, best_score = index, score
  return best


def test_windows_by_hand():
  spans = sliding_windows.spans
  assert spans(10, 6, 4) == [(0, 6), (4, 10)]  # The last window ends at the end.
  assert spans(10, 4, 3) == [(0, 4), (3, 7), (6, 10)]
  assert spans(10, 4, 9) == [(0, 4), (4, 8), (8, 10)]  # Stride past a window: a window on.
  assert spans(10, 4, 3, max_windows=2) == [(0, 4), (3, 7)]  # The rest is dropped.
  assert spans(4, 6, 4) == [(0, 4)]  # Shorter than one window.
  assert spans(6, 6, 2) == [(0, 6)]  # An exact fit.
  assert spans(0, 6, 4) == []
  assert spans(0, 6, 4, max_windows=3, empty_window=True) == [(0, 0)]  # [CLS] [SEP].
  # 10 tokens in windows of 6 every 2: the middle window wins tokens 4 and 5.
  assert spans(10, 6, 2) == [(0, 6), (2, 8), (4, 10)]
  assert sliding_windows.max_context_windows(spans(10, 6, 2), 10) == [0, 0, 0, 0, 1, 1, 2, 2,
                                                                       2, 2]
  # Token 2 scores 1.04 in both windows: the earlier wins.
  assert sliding_windows.max_context_windows([(0, 4), (1, 5)], 5) == [0, 0, 0, 1, 1]
  # A token past the last window belongs to none.
  assert sliding_windows.max_context_windows([(0, 4), (3, 7)], 9)[-2:] == [-1, -1]


LENGTHS = list(range(0, 23)) + [37, 64]
WINDOW_LENGTHS = [1, 2, 3, 4, 5, 7, 8, 16]
STRIDES = [1, 2, 3, 5, 8, 20]
MAX_WINDOWS = [None, 1, 2, 3, 5]


def test_python_windows_and_max_context_follow_the_definition():
  for num_tokens, window_length, stride, max_windows in itertools.product(
      LENGTHS, WINDOW_LENGTHS, STRIDES, MAX_WINDOWS):
    layout = (num_tokens, window_length, stride, max_windows)
    windows = sliding_windows.spans(num_tokens, window_length, stride, max_windows)
    assert windows == windows_by_definition(*layout), layout
    best = sliding_windows.max_context_windows(windows, num_tokens)
    assert best == [best_window_by_definition(windows, p) for p in range(num_tokens)], layout


def _python_layouts(rows, stride, max_windows, empty_window):
  """Per window, in order: (row, start, end, max-context flag per token)."""
  out = []
  for row, (num_tokens, window_length) in enumerate(rows):
    windows = sliding_windows.spans(num_tokens, window_length, stride, max_windows,
                                    empty_window)
    best = sliding_windows.max_context_windows(windows, num_tokens)
    out += [(row, start, end, [best[p] == index for p in range(start, end)])
            for index, (start, end) in enumerate(windows)]
  return out


@pytest.mark.parametrize("empty_window", [False, True])
@pytest.mark.parametrize("max_windows", MAX_WINDOWS)
def test_graph_windows_are_the_python_windows(max_windows, empty_window):
  """Every (length, window length) in one batch, each row's window length its
  own (as SQuAD's, after questions of different lengths), per stride."""
  rows = list(itertools.product(LENGTHS, WINDOW_LENGTHS))
  # Token p of row r is 1000 * r + p, to see which tokens each window holds.
  tokens = tf.ragged.constant([[1000 * r + p for p in range(n)] for r, (n, _) in enumerate(rows)],
                              dtype=tf.int32, ragged_rank=1)
  window_length = tf.constant([length for _, length in rows])
  for stride in STRIDES:
    windows = window_ops.spans(tokens, window_length, stride, max_windows, empty_window)
    expected = _python_layouts(rows, stride, max_windows, empty_window)
    got = list(zip(windows.sequence.numpy().tolist(), windows.start.numpy().tolist(),
                   windows.end.numpy().tolist(),
                   window_ops.max_context(tokens, windows).to_list()))
    assert got == expected, stride
    held = window_ops.gather_ranges(tokens, *windows).to_list()
    assert held == [[1000 * r + p for p in range(s, e)] for r, s, e, _ in expected]


def test_graph_windows_of_a_scalar_window_length_and_no_tokens():
  tokens = tf.ragged.constant([[5, 6, 7, 8, 9], [], [1]], dtype=tf.int32, ragged_rank=1)
  windows = window_ops.spans(tokens, 3, 1)
  assert windows.sequence.numpy().tolist() == [0, 0, 0, 2]
  assert windows.start.numpy().tolist() == [0, 1, 2, 0]
  assert windows.end.numpy().tolist() == [3, 4, 5, 1]
  assert window_ops.max_context(tokens, windows).to_list() == [
      [True, True, False], [False, True, False], [False, True, True], [True]]
  nothing = window_ops.spans(tf.ragged.constant([[], []], dtype=tf.int32, ragged_rank=1), 4, 2)
  assert nothing.start.shape == (0,)
  flags = window_ops.max_context(tf.ragged.constant([[], []], dtype=tf.int32, ragged_rank=1),
                                 nothing)
  assert flags.to_list() == []


def test_the_graph_rule_agrees_inside_a_tf_function():
  """The exports trace these ops: the same windows from a traced graph."""
  rows = [(n, length) for n in (0, 1, 9, 30) for length in (2, 5, 8)]
  tokens = tf.ragged.constant([list(range(n)) for n, _ in rows], dtype=tf.int32, ragged_rank=1)

  @tf.function
  def traced(tokens, window_length):
    windows = window_ops.spans(tokens, window_length, 3)
    return windows, window_ops.max_context(tokens, windows)

  windows, flags = traced(tokens, tf.constant([length for _, length in rows]))
  got = list(zip(windows.sequence.numpy().tolist(), windows.start.numpy().tolist(),
                 windows.end.numpy().tolist(), flags.to_list()))
  assert got == _python_layouts(rows, 3, None, False)
  assert np.all(windows.end.numpy() > windows.start.numpy())
