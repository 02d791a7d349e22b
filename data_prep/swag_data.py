"""SWAG multiple-choice data (Zellers et al., 2018): the CSV files, and the
four sequences the BERT paper scores for each example.

The paper's recipe: for each of the four endings, [CLS] sent1 [SEP] sent2
ending [SEP] (sent2 is the start of the sentence the ending completes),
truncated longest-first as the classifier's pairs; one learned vector scores
each sequence's pooled output and a softmax runs over the four. The original
release has no SWAG script; the files are read as published
(`train.csv`, `val.csv`, `test.csv`, a header naming the columns; test has no
`label`).
"""

import collections
import csv
import os

from absl import logging

from data_prep import classifier_data
from data_prep import text_io
from data_prep.errors import UserError

NUM_CHOICES = 4
COLUMNS = ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3")
FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}

SwagExample = collections.namedtuple(
    "SwagExample", ["swag_id", "context", "start_ending", "endings", "label", "source"])


def read_swag_examples(input_file, has_label):
  """The examples of one SWAG CSV file; `has_label` for train and val.

  A missing column or file, a label outside 0-3 or an empty ending is an
  error naming the file and line.
  """
  if not text_io.exists(input_file):
    raise UserError("%s: no such file. Check --data_dir (it must hold %s)." % (
        input_file, ", ".join(sorted(FILES.values()))))
  examples = []
  header = None
  for line_number, text in text_io.iter_text_lines(input_file):
    fields = next(csv.reader([text]), [])
    if header is None:
      header = {name: i for i, name in enumerate(fields)}
      wanted = COLUMNS + (("label",) if has_label else ())
      missing = [c for c in wanted if c not in header]
      if missing:
        raise UserError("%s:%d: the header has no column %s; SWAG files have %s." % (
            input_file, line_number, ", ".join(missing), ", ".join(wanted)))
      continue
    if not fields:
      continue
    source = "%s:%d" % (input_file, line_number)
    if len(fields) < len(header):
      raise UserError("%s: %d fields, the header names %d." % (
          source, len(fields), len(header)))
    endings = [fields[header["ending%d" % i]] for i in range(NUM_CHOICES)]
    if not all(e.strip() for e in endings):
      raise UserError("%s: ending%d is empty; every example needs four endings." % (
          source, [bool(e.strip()) for e in endings].index(False)))
    label = None
    if has_label:
      label_text = fields[header["label"]].strip()
      if label_text not in ("0", "1", "2", "3"):
        raise UserError("%s: label %r is not an ending index (0-3)." % (source, label_text))
      label = int(label_text)
    swag_id = fields[header["fold-ind"]] if "fold-ind" in header else str(len(examples))
    examples.append(SwagExample(swag_id, fields[header["sent1"]], fields[header["sent2"]],
                                endings, label, source))
  return examples


def examples_of(data_dir, split):
  """`split` ("train", "dev" or "test") of the SWAG files in `data_dir`."""
  return read_swag_examples(os.path.join(data_dir, FILES[split]), split != "test")


def choice_features(example, tokenizer, max_seq_length):
  """input_ids, input_mask, segment_ids: four zero-padded sequences each."""
  ids, masks, segments = [], [], []
  for ending in example.endings:
    tokens, segment_ids = classifier_data.pack_tokens(
        tokenizer, example.context, example.start_ending + " " + ending, max_seq_length)
    padding = max_seq_length - len(tokens)
    ids.append(tokenizer.convert_tokens_to_ids(tokens) + [0] * padding)
    masks.append([1] * len(tokens) + [0] * padding)
    segments.append(segment_ids + [0] * padding)
  return ids, masks, segments


def serialize_example(example, tokenizer, max_seq_length, is_real_example=True):
  """One record: the four sequences concatenated, the label (0 for test)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  ids, masks, segments = choice_features(example, tokenizer, max_seq_length)
  feature = {"input_ids": ints([i for row in ids for i in row]),
             "input_mask": ints([m for row in masks for m in row]),
             "segment_ids": ints([s for row in segments for s in row]),
             "label_ids": ints([example.label or 0]),
             "is_real_example": ints([int(is_real_example)])}
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_records(examples, tokenizer, max_seq_length, output_file):
  """One record per example, written atomically."""
  from data_prep import tfrecord_io  # pylint: disable=g-import-not-at-top
  with tfrecord_io.atomic_writers([output_file]) as (writer,):
    for start in range(0, len(examples), 4096):
      logging.info("Writing example %d of %d", start, len(examples))
      writer.write_records([serialize_example(e, tokenizer, max_seq_length)
                            for e in examples[start:start + 4096]])


def name_to_features(seq_length):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  choices = NUM_CHOICES * seq_length
  return {"input_ids": tf.io.FixedLenFeature([choices], tf.int64),
          "input_mask": tf.io.FixedLenFeature([choices], tf.int64),
          "segment_ids": tf.io.FixedLenFeature([choices], tf.int64),
          "label_ids": tf.io.FixedLenFeature([], tf.int64),
          "is_real_example": tf.io.FixedLenFeature([], tf.int64)}


def read_records(input_file, seq_length, is_training=False, seed=0, input_context=None):
  """Feature dicts of `write_records`' file, ids as int32 [4, seq_length]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def unflatten(features):
    for name in ("input_ids", "input_mask", "segment_ids"):
      features[name] = tf.reshape(features[name], [NUM_CHOICES, seq_length])
    return features
  records = classifier_data.read_records(
      input_file, seq_length, is_training=is_training, seed=seed,
      input_context=input_context, spec=name_to_features(seq_length))
  return records.map(unflatten, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def dataset(input_file, seq_length, batch_size, is_training, seed=0, input_context=None):
  """Batches of `read_records` (training: repeated, shuffled, whole batches)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  records = read_records(input_file, seq_length, is_training, seed, input_context)
  return records.batch(batch_size, drop_remainder=is_training).prefetch(tf.data.AUTOTUNE)


def write_predictions(path, examples, probabilities):
  """`id`, the predicted ending's index and the four probabilities, one
  example a line after a header, tab-separated; written atomically."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as writer:
    writer.write("id\tprediction\t%s\n" % "\t".join(
        "probability%d" % i for i in range(NUM_CHOICES)))
    for example, row in zip(examples, probabilities):
      row = np.asarray(row, np.float32)
      writer.write("%s\t%d\t%s\n" % (example.swag_id, int(np.argmax(row)),
                                     "\t".join(str(p) for p in row)))
  tf.io.gfile.rename(tmp, path, overwrite=True)
