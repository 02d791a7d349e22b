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
import numpy as np

from plumbing.errors import UserError
from plumbing import files
from plumbing import text_io
from plumbing import tf_example
from plumbing import tfrecord
from tasks import pair_packing

NUM_CHOICES = 4
COLUMNS = ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3")
FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}
_RECORD_BATCH = 4096

SwagExample = collections.namedtuple(
    "SwagExample", ["swag_id", "context", "start_ending", "endings", "label", "source"])


def read_swag_examples(input_file, has_label):
  """The examples of one SWAG CSV file; `has_label` for train and val.

  A missing column or file, a label outside 0-3 or an empty ending is an
  error naming the file and line.
  """
  if not files.exists(input_file):
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


def choice_features(examples, tokenizer, max_seq_length):
  """input_ids, input_mask, segment_ids, int64 [len(examples), 4,
  max_seq_length]: each ending packed as the classifier packs a pair,
  context then start + " " + ending (pair_packing.pack_batch)."""
  sequences = pair_packing.pack_batch(
      tokenizer, [e.context for e in examples for _ in e.endings],
      [e.start_ending + " " + ending for e in examples for ending in e.endings],
      max_seq_length)
  return tuple(v.reshape(len(examples), NUM_CHOICES, max_seq_length) for v in sequences)


def example_spec(seq_length):
  """The records: the four sequences of each example as [4, seq_length], the
  right ending's index, in the canonical (sorted) order of the features."""
  choices = [NUM_CHOICES, seq_length]
  return tf_example.ExampleSpec(sorted([
      ("input_ids", "int64", choices), ("input_mask", "int64", choices),
      ("segment_ids", "int64", choices), ("label_ids", "int64", []),
      ("is_real_example", "int64", [])]))


def write_records(examples, tokenizer, max_seq_length, output_file):
  """One record per example (the label is 0 for test), written atomically."""
  spec = example_spec(max_seq_length)
  with tfrecord.atomic_writers([output_file]) as (writer,):
    for start in range(0, len(examples), _RECORD_BATCH):
      logging.info("Writing example %d of %d", start, len(examples))
      chunk = examples[start:start + _RECORD_BATCH]
      sequences = choice_features(chunk, tokenizer, max_seq_length)
      ints, floats = spec.empty_columns(len(chunk))
      for name, values in zip(("input_ids", "input_mask", "segment_ids"), sequences):
        ints[:, spec.int_columns[name]] = values.reshape(len(chunk), -1)
      ints[:, spec.int_columns["label_ids"]] = np.reshape([e.label or 0 for e in chunk],
                                                          (-1, 1))
      ints[:, spec.int_columns["is_real_example"]] = 1
      writer.write_batch(*spec.encode_batch(ints, floats))


def write_predictions(path, examples, probabilities):
  """`id`, the predicted ending's index and the four probabilities, one
  example a line after a header, tab-separated; written atomically."""
  with files.atomic_output(path) as writer:
    writer.write("id\tprediction\t%s\n" % "\t".join(
        "probability%d" % i for i in range(NUM_CHOICES)))
    for example, row in zip(examples, probabilities):
      row = np.asarray(row, np.float32)
      writer.write("%s\t%d\t%s\n" % (example.swag_id, int(np.argmax(row)),
                                     "\t".join(str(p) for p in row)))
