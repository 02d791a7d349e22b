"""Texts longer than max_seq_length, classified as overlapping windows.

The original truncates a long text: whatever lies past max_seq_length tokens
never reaches the model. With windows, a long text becomes up to
`max_windows` sequences whose bodies start every `stride` tokens
(tasks/sliding_windows.py, as SQuAD's documents), each packed as the
original packs an example; the model classifies every window and combines
their logits (modeling.BertWindowClassifier), in training as in evaluation,
prediction and the export (serving/packing.pack_windows makes the same
windows in the graph).

Which text slides: a single text (or a pair whose B has no tokens) slides
over A. A pair that does not fit slides over B, the second text (a passage
after a question or a hypothesis); every window repeats A, cut to at most
half of the space. A text or pair that fits is one window, exactly the
original's features.
"""

import dataclasses

from absl import logging

from data_prep import tokenization
from modeling import heads
from tasks import sliding_windows
from tasks.classification import features


@dataclasses.dataclass(frozen=True)
class WindowSettings:
  """stride: tokens between the starts of consecutive windows (at most a
  window's length: no token is skipped); max_windows: windows per text at
  most, the tokens past the last one are dropped."""
  stride: int
  max_windows: int


def kept_prefix_length(len_a, len_b, max_seq_length):
  """How many of A's tokens each window of a pair keeps: all when the pair
  fits in one sequence, else at most half of the space."""
  if len_a + len_b <= max_seq_length - 3:
    return len_a
  return min(len_a, (max_seq_length - 3) // 2)


def window_rows(tokenizer, text_a, text_b, max_seq_length, settings):
  """[(tokens, segment_ids)] of one example's windows, unpadded, and whether
  tokens were dropped past the last window."""
  tokens_a = tokenizer.tokenize(text_a)
  tokens_b = tokenizer.tokenize(text_b) if text_b else []
  if tokens_b:
    prefix = tokens_a[:kept_prefix_length(len(tokens_a), len(tokens_b), max_seq_length)]
    body, window_length = tokens_b, max_seq_length - 3 - len(prefix)
  else:
    prefix, body, window_length = None, tokens_a, max_seq_length - 2
  spans = sliding_windows.spans(len(body), window_length, settings.stride,
                                settings.max_windows, empty_window=True)
  rows = []
  for start, end in spans:
    head = [tokenization.CLS_TOKEN] + (prefix if prefix is not None else body[start:end])
    tokens = head + [tokenization.SEP_TOKEN]
    segment_ids = [0] * len(tokens)
    if prefix is not None:
      tokens += body[start:end] + [tokenization.SEP_TOKEN]
      segment_ids += [1] * (end - start + 1)
    rows.append((tokens, segment_ids))
  return rows, spans[-1][1] < len(body)


def convert_windowed_example(example, label_list, max_seq_length, tokenizer, settings):
  """InputFeatures whose input_ids, input_mask and segment_ids are
  [max_windows][max_seq_length] (windows past the text's last are all zeros),
  and whether the text was cut after its last window."""
  is_regression = features.problem_of(label_list) == heads.REGRESSION
  empty = [[0] * max_seq_length for _ in range(settings.max_windows)]
  if isinstance(example, features.PaddingInputExample):
    return features.InputFeatures(empty, empty, empty, 0.0 if is_regression else 0,
                                  is_real_example=False), False
  label_id = features.label_ids_of([example], label_list, is_regression)[0]
  rows, cut = window_rows(tokenizer, example.text_a, example.text_b, max_seq_length, settings)
  input_ids, input_mask, segment_ids = [], [], []
  for tokens, segments in rows:
    padding = [0] * (max_seq_length - len(tokens))
    input_ids.append(tokenizer.convert_tokens_to_ids(tokens) + padding)
    input_mask.append([1] * len(tokens) + padding)
    segment_ids.append(segments + padding)
  unused = settings.max_windows - len(rows)
  return features.InputFeatures(input_ids + empty[:unused], input_mask + empty[:unused],
                                segment_ids + empty[:unused], label_id), cut


def write_windowed_records(examples, label_list, max_seq_length, tokenizer, settings,
                           output_file):
  """Writes one record per example, its windows side by side (atomically),
  and logs how many texts needed several windows and how many were cut."""
  counts = {"windowed": 0, "cut": 0}

  def convert(unused_index, example):
    feature, cut = convert_windowed_example(example, label_list, max_seq_length, tokenizer,
                                            settings)
    counts["windowed"] += sum(1 for mask in feature.input_mask if mask[0]) > 1
    counts["cut"] += cut
    return feature

  features.write_feature_records(
      examples, features.example_spec(max_seq_length, features.problem_of(label_list),
                                      windows=settings.max_windows), convert, output_file)
  logging.info("%s: %d of %d examples longer than one window; %d cut after %d windows.",
               output_file, counts["windowed"], len(examples), counts["cut"],
               settings.max_windows)
