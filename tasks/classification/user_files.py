"""A classification task from the user's own files: CSV, TSV or JSON Lines,
columns named by flag, labels found in the training file.

    processor = user_files.UserFilesProcessor(
        {"train": "train.csv", "dev": "dev.csv", "test": "test.csv"},
        user_files.Columns(text_a="review", label="sentiment"),
        labels=user_files.discover_labels("train.csv", columns))

The files are read as tasks/table_files.py reads them (a column is a header
name, or a 0-based index for files without a header). Labels are sorted
(as numbers where they all are integers), as Hugging Face's run_glue sorts
them; a run keeps them in --output_dir's labels.txt, which later runs,
exports and conversions read. A regression task's labels are numbers, scored
as STS-B is (Pearson and Spearman correlation).
"""

import dataclasses
import os
from typing import Optional, Union

from plumbing.errors import UserError
from plumbing import files
from tasks import table_files
from tasks.classification.features import InputExample
from tasks.classification.glue import DataProcessor

# Header names read as the texts when --text_a_column is not given.
_PAIR_NAMES = ("sentence1", "sentence2")
_TEXT_NAMES = ("text", "sentence")

Column = Union[str, int]


@dataclasses.dataclass(frozen=True)
class Columns(object):
  """Where the texts and the label are: header names, or 0-based indexes
  (files without a header). `text_a` None: found from the header."""
  text_a: Optional[Column] = None
  text_b: Optional[Column] = None
  label: Optional[Column] = None

  @classmethod
  def from_flags(cls, text_a, text_b, label):
    """From the flags' strings: all indexes (digits), or all names."""
    given = [v for v in (text_a, text_b, label) if v not in (None, "")]
    numeric = [v.isdigit() for v in given]
    if any(numeric) and not all(numeric):
      raise UserError("--text_a_column, --text_b_column and --label_column must all be "
                      "header names, or all 0-based indexes (for files without a header); "
                      "got %s." % ", ".join(given))
    as_column = lambda v: None if v in (None, "") else int(v) if v.isdigit() else v
    return cls(as_column(text_a), as_column(text_b), as_column(label))

  @property
  def has_header(self):
    return not any(isinstance(c, int) for c in (self.text_a, self.text_b, self.label))


def _text_columns(table, columns, flag):
  """(text_a, text_b) columns: as given, else from the header."""
  if columns.text_a is not None:
    for column, name in ((columns.text_a, "--text_a_column"),
                         (columns.text_b, "--text_b_column")):
      if column is not None and not table.has(column):
        raise UserError("%s=%s: %s has no column %r (columns: %s)." % (
            name, column, table.path, column, ", ".join(table.names())))
    return columns.text_a, columns.text_b
  names = [n for n in table.names() if n != columns.label]
  if all(n in names for n in _PAIR_NAMES):
    return _PAIR_NAMES
  for name in _TEXT_NAMES:
    if name in names:
      return name, None
  if len(names) == 1:
    return names[0], None
  raise UserError("%s=%s: say which column holds the text with --text_a_column (and "
                  "--text_b_column for pairs); its columns are %s." % (
                      flag, table.path, ", ".join(names) or "none"))


def _label_column(table, columns, flag, required):
  """The label column, or None where a test file has none."""
  label = "label" if columns.label is None and columns.has_header else columns.label
  if label is None:
    raise UserError("--label_column: give the label's 0-based index (the text columns are "
                    "indexes: %s has no header)." % table.path)
  if isinstance(label, int) or table.has(label):
    return label
  if not required:
    return None
  raise UserError("%s=%s has no label column %r (columns: %s): name it with "
                  "--label_column." % (flag, table.path, label, ", ".join(table.names())))


def _number(value, source):
  try:
    return float(value)
  except ValueError:
    raise UserError("%s: the label %r is not a number (--regression)." % (source,
                                                                         value)) from None


def _label_order(values):
  """Labels sorted, as numbers where every one is an integer."""
  def as_int(v):
    try:
      return int(v)
    except ValueError:
      return None
  if all(as_int(v) is not None for v in values):
    return sorted(values, key=lambda v: (as_int(v), v))
  return sorted(values)


def split_labels(value, separator):
  """A multi-label field's labels: `value` cut at `separator`, each
  stripped, empty ones dropped (a text may have none)."""
  return tuple(label.strip() for label in value.split(separator) if label.strip())


def discover_labels(path, columns, flag="--train_file", separator=None):
  """The training file's distinct labels, in order (see the module doc);
  with `separator`, each field holds any number of them."""
  table = table_files.Table(path, flag, columns.has_header)
  label = _label_column(table, columns, flag, required=True)
  values = {table.value(n, row, label, "label").strip() for n, row in table.rows}
  if not table.rows:
    raise UserError("%s=%s has no rows." % (flag, path))
  if separator:
    values = {one for value in values for one in split_labels(value, separator)}
    if not values:
      raise UserError("%s=%s: no row has a label." % (flag, path))
  return _label_order(values)


def labels_for(paths, columns, label_names, output_dir, regression=False, separator=None):
  """The label list of a run: --label_names, else the labels.txt of an
  earlier run in `output_dir`, else the training file's labels."""
  if regression:
    return [None]
  kept = files.read_labels(output_dir)
  if label_names:
    if len(set(label_names)) != len(label_names):
      raise UserError("--label_names names a label twice: %s." % ",".join(label_names))
    if kept and list(kept) != list(label_names):
      raise UserError("--label_names=%s differs from %s (%s), which the model in "
                      "--output_dir was trained with: use a new --output_dir." % (
                          ",".join(label_names), os.path.join(output_dir, files.LABELS_FILE),
                          ",".join(kept)))
    return list(label_names)
  if kept:
    return kept
  if not paths.get("train"):
    raise UserError("No labels: --output_dir has no %s of an earlier run; give --train_file "
                    "(its labels) or --label_names." % files.LABELS_FILE)
  return discover_labels(paths["train"], columns, separator=separator)


class UserFilesProcessor(DataProcessor):
  """The DataProcessor of a task from the user's files. `paths`: split ->
  path (or None); `labels`: the label list (ignored with `regression`);
  `separator`: a multi-label task's, between a text's labels (its examples'
  labels are then tuples)."""

  names = ("user_files",)
  submission_name = "test_predictions"

  _FLAGS = {"train": "--train_file", "dev": "--dev_file", "test": "--test_file"}

  def __init__(self, paths, columns, labels=(), regression=False, separator=None):
    self.paths, self.columns, self.separator = paths, columns, separator
    self.is_regression = regression
    self.labels = (None,) if regression else tuple(labels)
    self.metrics = ("f1",) if len(self.labels) == 2 else ()
    first = next((p, self._FLAGS[s]) for s, p in sorted(paths.items()) if p)
    table = table_files.Table(first[0], first[1], columns.has_header)
    a, b = _text_columns(table, columns, first[1])
    self.text_columns = (a, b)
    self.single_sentence = b is None
    # Every file is read now: a mistake in the dev file shows before training.
    self._read = {split: self._examples(split) for split, path in paths.items() if path}
    if len(self.labels) < 2 and not (regression or separator):
      # (A multi-label task's one label is a yes or no per text.)
      raise UserError("Only one label (%s): a classifier chooses among two or more. Give "
                      "--label_names with every label, or --regression for a score." %
                      ",".join(self.labels))

  def _examples(self, split):
    path, flag = self.paths[split], self._FLAGS[split]
    table = table_files.Table(path, flag, self.columns.has_header)
    a, b = self.text_columns
    _text_columns(table, Columns(a, b, self.columns.label), flag)  # Each file has them.
    label_column = _label_column(table, self.columns, flag, required=split != "test")
    examples = []
    for i, (number, row) in enumerate(table.rows):
      source = "%s:%d" % (path, number)
      label = None
      if label_column is not None:
        value = table.value(number, row, label_column, "label").strip()
        if self.is_regression:
          label = _number(value, source)
        elif self.separator:
          label = split_labels(value, self.separator)
          unseen = [one for one in label if one not in self.labels]
          if unseen:
            raise UserError("%s: the label %r is not one of the training labels (%s)." % (
                source, unseen[0], ", ".join(self.labels)))
        elif value not in self.labels:
          raise UserError("%s: the label %r is not one of the training labels (%s)." % (
              source, value, ", ".join(self.labels)))
        else:
          label = value
      if split == "test":
        label = 0.0 if self.is_regression else () if self.separator else self.labels[0]
      examples.append(InputExample(
          guid="%s-%d" % (split, i), text_a=table.value(number, row, a, "text"),
          text_b=None if b is None else table.value(number, row, b, "text_b"),
          label=label, source=source, index=str(i) if split == "test" else None))
    return examples

  def _split(self, split):
    if split not in self._read:
      flag = self._FLAGS[split]
      raise UserError("%s is needed for this run (%s)." % (
          flag, {"train": "--do_train", "dev": "--do_eval", "test": "--do_predict"}[split]))
    return self._read[split]

  def get_train_examples(self, data_dir):
    return self._split("train")

  def get_dev_examples(self, data_dir):
    return self._split("dev")

  def get_test_examples(self, data_dir):
    return self._split("test")
