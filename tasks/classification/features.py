"""Sentence(-pair) classification: examples, the original's features, their records.

`InputExample`, `PaddingInputExample`, `InputFeatures`,
`convert_single_example` ([CLS] A [SEP] B [SEP], longest-first truncation,
zero padding) and `file_based_convert_examples_to_features` keep the
original `run_classifier.py`'s names and behaviour; the records hold what the
original wrote. The sequences are packed by tasks/pair_packing.py: one example
at a time for convert_single_example, a few thousand at once for the records.
"""

from absl import logging
import numpy as np

from modeling import heads
from plumbing.errors import UserError
from plumbing import tf_example
from plumbing import tfrecord
from tasks import pair_packing

_RECORD_BATCH = 4096


class InputExample(object):
  """One example: its id, one or two texts and (except for test) its label.

  `source` ("file:line") is where it was read, for error messages; `index`
  is its id in a GLUE test file, for the submission file.
  """

  def __init__(self, guid, text_a, text_b=None, label=None, source=None, index=None):
    self.guid = guid
    self.text_a = text_a
    self.text_b = text_b
    self.label = label
    self.source = source
    self.index = index


class PaddingInputExample(object):
  """A stand-in that fills the last batch to full size; never counted.

  Fixed-size batches are what TPUs (and compiled steps) need; padding
  examples get `is_real_example=0` and are dropped from every metric and
  output.
  """


class InputFeatures(object):
  """The model inputs of one example."""

  def __init__(self, input_ids, input_mask, segment_ids, label_id, is_real_example=True):
    self.input_ids = input_ids
    self.input_mask = input_mask
    self.segment_ids = segment_ids
    self.label_id = label_id
    self.is_real_example = is_real_example



def problem_of(label_list):
  """The problem (modeling/heads.py) a task of `label_list` poses, as the
  processors say it: a score for [None] (STS-B, a user's numeric labels),
  else one label of many. A multi-label task says so itself."""
  return heads.REGRESSION if label_list == [None] else heads.SINGLE_LABEL


def label_map_of(label_list):
  return {label: i for i, label in enumerate(label_list)}


def label_ids_of(examples, label_list, is_regression):
  """Each example's label id (its score, for regression)."""
  if is_regression:
    return [float(e.label) for e in examples]
  label_map = label_map_of(label_list)
  return [_label_id(e, label_map, False) for e in examples]


def _label_id(example, label_map, is_regression):
  """The label's id; its score for regression; for a multi-label example
  (a tuple of labels), a 0 or 1 per label."""
  if is_regression:
    return float(example.label)
  try:
    if isinstance(example.label, tuple):
      hot = [0] * len(label_map)
      for label in example.label:
        hot[label_map[label]] = 1
      return hot
    return label_map[example.label]
  except KeyError as e:
    raise UserError("%s: unknown label %r; the task's labels are %s." % (
        example.source or example.guid, e.args[0],
        ", ".join(repr(k) for k in label_map))) from None


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
  """Packs an example as [CLS] A [SEP] (B [SEP]), zero-padded to max_seq_length.

  Segment ids are 0 up to the first [SEP] and 1 for B and its [SEP].
  A regression task (label_list [None]) keeps its float label.
  """
  is_regression = problem_of(label_list) == heads.REGRESSION
  if isinstance(example, PaddingInputExample):
    return InputFeatures(input_ids=[0] * max_seq_length, input_mask=[0] * max_seq_length,
                         segment_ids=[0] * max_seq_length,
                         label_id=0.0 if is_regression else 0, is_real_example=False)
  label_id = _label_id(example, label_map_of(label_list), is_regression)
  tokens, segment_ids = pair_packing.pack_tokens(tokenizer, example.text_a, example.text_b,
                                                 max_seq_length)
  input_ids = tokenizer.convert_tokens_to_ids(tokens)
  input_mask = [1] * len(input_ids)
  padding = max_seq_length - len(input_ids)
  input_ids += [0] * padding
  input_mask += [0] * padding
  segment_ids += [0] * padding

  if ex_index < 5:
    logging.info("*** Example ***")
    logging.info("guid: %s", example.guid)
    logging.info("tokens: %s", " ".join(tokens))
    logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
    logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
    logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
    logging.info("label: %s (id = %s)", example.label, label_id)
  return InputFeatures(input_ids=input_ids, input_mask=input_mask,
                       segment_ids=segment_ids, label_id=label_id, is_real_example=True)


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
  return [convert_single_example(i, e, label_list, max_seq_length, tokenizer)
          for i, e in enumerate(examples)]


# ---------------------------------------------------------------------------
# Records.

def example_spec(seq_length, problem=heads.SINGLE_LABEL, num_labels=None, windows=None):
  """The records' features, as the original wrote them, in the canonical order
  (sorted by name) that `SerializeToString(deterministic=True)` gives.
  label_ids is the label's index, its score for heads.REGRESSION, a 0 or 1
  for each of the `num_labels` for heads.MULTI_LABEL. With `windows`
  (tasks/classification/windows.py), each sequence feature is [windows,
  seq_length]."""
  shape = [windows, seq_length] if windows else [seq_length]
  return tf_example.ExampleSpec(sorted([
      ("input_ids", "int64", shape), ("input_mask", "int64", shape),
      ("segment_ids", "int64", shape),
      ("label_ids", "float32" if problem == heads.REGRESSION else "int64",
       [num_labels] if problem == heads.MULTI_LABEL else []),
      ("is_real_example", "int64", [])]))


def _feature_row(feature):
  return {"input_ids": feature.input_ids, "input_mask": feature.input_mask,
          "segment_ids": feature.segment_ids, "label_ids": feature.label_id,
          "is_real_example": int(feature.is_real_example)}


def write_feature_records(examples, spec, convert, output_file):
  """Writes convert(index, example) (InputFeatures) of each example to
  `output_file`, one record each, atomically: a failure leaves no file behind."""
  with tfrecord.atomic_writers([output_file]) as (writer,):
    rows = []
    for ex_index, example in enumerate(examples):
      if ex_index % 10000 == 0:
        logging.info("Writing example %d of %d", ex_index, len(examples))
      rows.append(_feature_row(convert(ex_index, example)))
      if len(rows) == _RECORD_BATCH or ex_index == len(examples) - 1:
        writer.write_batch(*spec.encode_batch(*spec.columns_of(rows)))
        rows = []


def file_based_convert_examples_to_features(examples, label_list, max_seq_length,
                                            tokenizer, output_file, problem=None):
  """Writes one record per example to `output_file` (atomically): what
  convert_single_example gives, made by pack_batch a few thousand at a time.
  `problem`: the task's (problem_of(label_list) if not given)."""
  problem = problem or problem_of(label_list)
  is_regression, multi_label = problem == heads.REGRESSION, problem == heads.MULTI_LABEL
  spec = example_spec(max_seq_length, problem, len(label_list))
  no_label = [0] * len(label_list) if multi_label else 0
  label_map = label_map_of(label_list)
  with tfrecord.atomic_writers([output_file]) as (writer,):
    for start in range(0, len(examples), _RECORD_BATCH):
      logging.info("Writing example %d of %d", start, len(examples))
      chunk = examples[start:start + _RECORD_BATCH]
      for ex_index in range(start, min(start + len(chunk), 5)):  # The original's log.
        convert_single_example(ex_index, examples[ex_index], label_list, max_seq_length,
                               tokenizer)
      real = np.array([not isinstance(e, PaddingInputExample) for e in chunk])
      texts = [(e.text_a, e.text_b) if r else ("", None) for e, r in zip(chunk, real)]
      sequences = pair_packing.pack_batch(tokenizer, [a for a, _ in texts],
                                          [b for _, b in texts], max_seq_length)
      ints, floats = spec.empty_columns(len(chunk))
      for name, values in zip(("input_ids", "input_mask", "segment_ids"), sequences):
        ints[:, spec.int_columns[name]] = values * real[:, None]
      labels = np.reshape([_label_id(e, label_map, is_regression) if r else no_label
                           for e, r in zip(chunk, real)], (len(chunk), -1))
      if is_regression:
        floats[:, spec.float_columns["label_ids"]] = labels
      else:
        ints[:, spec.int_columns["label_ids"]] = labels
      ints[:, spec.int_columns["is_real_example"]] = real[:, None]
      writer.write_batch(*spec.encode_batch(ints, floats))
