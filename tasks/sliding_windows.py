"""Overlapping windows over a token sequence, and each token's best window.

A sequence longer than the model's input is read in windows of at most
`window_length` tokens, a new one every `stride` tokens (run_squad.py's
doc_stride), until a window reaches the end. A token that several windows
hold is read (answered, tagged) in one of them only: the window where
min(its tokens before, its tokens after) + 0.01 * the window's length is
highest, the earlier window on a tie. SQuAD's features, NER's windows and
long classified texts are cut here; serving/window_ops.py cuts the same
windows with TensorFlow ops.
"""

import numpy as np


def spans(num_tokens, window_length, stride, max_windows=None, empty_window=False):
  """(start, end) of each window over `num_tokens` tokens, end excluded.

  Windows start at 0, stride, 2 * stride, ... (a stride longer than a window
  counts as one window: no token is skipped) until one reaches the end, or
  after `max_windows`. No tokens give no window, or with `empty_window` one
  empty window (a classified text is [CLS] [SEP] even when empty).
  """
  if num_tokens == 0:
    return [(0, 0)] if empty_window else []
  step = max(1, min(stride, window_length))
  windows = []
  start = 0
  while max_windows is None or len(windows) < max_windows:
    end = min(start + window_length, num_tokens)
    windows.append((start, end))
    if end >= num_tokens:
      break
    start += step
  return windows


def max_context_windows(windows, num_tokens):
  """For each of `num_tokens` tokens, the index in `windows` ((start, end)
  pairs) of its max-context window (-1 for a token in none).

  One array pass per window rather than a scan of every window per token,
  with the scores in doubles as Python floats.
  """
  best = np.full(num_tokens, -1, np.int64)
  best_score = np.full(num_tokens, -np.inf)
  for index, (start, end) in enumerate(windows):
    length = end - start
    position = np.arange(length)
    score = np.minimum(position, length - 1 - position) + 0.01 * length
    better = score > best_score[start:end]
    best_score[start:end][better] = score[better]
    best[start:end][better] = index
  return best.tolist()
