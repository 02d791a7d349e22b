"""The sentence(-pair) classification tasks: GLUE and XNLI, each declared once.

A task is one processor class here: how its files are read (columns, header,
guids, label list, as the original `run_classifier.py` read them for XNLI,
MNLI, MRPC and CoLA), its GLUE metrics, its submission file name and where
tensorflow-datasets keeps it. Adding a task is adding a class and listing it
in TASKS:

    class BoolqProcessor(_HeaderedGlueProcessor):  # A passage, a yes/no question.
      names = ("boolq",)
      text_columns = (1, 2)
      test_text_columns = (1, 2)
      labels = ("False", "True")

and `run_classifier.py --task_name=boolq` reads `train.tsv`, `dev.tsv` and
`test.tsv` from --data_dir. Beyond the original: MNLI mismatched, SST-2, QQP,
QNLI, RTE, WNLI and STS-B (a regression task), every GLUE task also from
tensorflow-datasets (`--data_dir=tfds`, tasks/classification/tfds.py), and
errors that name the file and line instead of an IndexError or KeyError deep
inside the conversion.
"""

import csv
import os

from data_prep import tokenization
from plumbing.errors import UserError
from plumbing import files
from plumbing import text_io
from tasks import tfds_data
from tasks.classification import tfds
from tasks.classification.features import InputExample

TFDS_DATA_DIR = tfds_data.DATA_DIR


class _Line(list):
  """The fields of one TSV line; a missing column is an error naming the line."""

  def __init__(self, fields, path, line_number):
    super().__init__(fields)
    self.path = path
    self.line_number = line_number

  @property
  def source(self):
    return "%s:%d" % (self.path, self.line_number)

  def __getitem__(self, index):
    try:
      return super().__getitem__(index)
    except IndexError:
      wanted = index + 1 if index >= 0 else -index
      raise UserError(
          "%s: expected at least %d tab-separated columns, found %d. Is this the "
          "right file for the task (see --task_name)?" %
          (self.source, wanted, len(self))) from None


def read_tsv(input_file, quotechar=None):
  """The lines of a tab-separated file, read as the original read them
  (TensorFlow's text reader, then `csv` with no quoting by default).

  Each line is a list of fields that also knows its file and line number.
  """
  if not files.exists(input_file):
    raise UserError("%s: no such file. Check --data_dir and --task_name." % input_file)
  lines = []
  for line_number, text in text_io.iter_text_lines(input_file):
    fields = next(csv.reader([text], delimiter="\t", quotechar=quotechar), [])
    lines.append(_Line(fields, input_file, line_number))
  return lines


class DataProcessor(object):
  """Reads one task's train/dev/test files into InputExamples, and declares
  what else the task is."""

  names = ()  # --task_name values (case-insensitive); the first is the task's key.
  labels = ()  # The label list; (None,) for a regression task.
  # Name of the GLUE submission file for the test predictions; None where
  # the task is not part of GLUE.
  submission_name = None
  metrics = ()  # GLUE metrics besides accuracy: "f1", "mcc".
  is_regression = False
  single_sentence = False  # No text_b: the export takes text_a alone.
  # tensorflow-datasets: the dataset, its text features, our split -> its split.
  tfds_name = None
  tfds_text_features = ()
  tfds_splits = {"train": "train", "dev": "validation", "test": "test"}

  def get_train_examples(self, data_dir):
    raise NotImplementedError()

  def get_dev_examples(self, data_dir):
    raise NotImplementedError()

  def get_test_examples(self, data_dir):
    raise NotImplementedError()

  def get_labels(self):
    return list(self.labels)

  @property
  def num_labels(self):
    return 1 if self.is_regression else len(self.labels)

  @classmethod
  def _read_tsv(cls, input_file, quotechar=None):
    return read_tsv(input_file, quotechar)


def _text(value):
  return tokenization.convert_to_unicode(value)


def _example(line, guid, text_a, text_b=None, label=None, index=None):
  return InputExample(guid=guid, text_a=text_a, text_b=text_b, label=label,
                      source=line.source, index=index)


class XnliProcessor(DataProcessor):
  """XNLI: train on the machine-translated MultiNLI of one language, evaluate
  on that language's part of the XNLI dev set (the original: Chinese)."""

  names = ("xnli",)
  labels = ("contradiction", "entailment", "neutral")

  def __init__(self, language="zh"):
    self.language = language

  def get_train_examples(self, data_dir):
    path = os.path.join(data_dir, "multinli", "multinli.train.%s.tsv" % self.language)
    examples = []
    for i, line in enumerate(self._read_tsv(path)):
      if i == 0:
        continue
      label = _text(line[2])
      if label == "contradictory":  # The translated files spell it so.
        label = "contradiction"
      examples.append(_example(line, "train-%d" % i, _text(line[0]), _text(line[1]), label))
    return examples

  def get_dev_examples(self, data_dir):
    examples = []
    for i, line in enumerate(self._read_tsv(os.path.join(data_dir, "xnli.dev.tsv"))):
      if i == 0:
        continue
      if _text(line[0]) != self.language:
        continue
      examples.append(_example(line, "dev-%d" % i, _text(line[6]), _text(line[7]),
                               _text(line[1])))
    return examples

  def get_test_examples(self, data_dir):
    raise UserError("XNLI has no test split here: the original evaluates on "
                    "xnli.dev.tsv (use --do_eval, not --do_predict).")


class MnliProcessor(DataProcessor):
  """MultiNLI (GLUE), matched dev/test sets as in the original."""

  names = ("mnli", "mnli-m", "mnli_matched")
  labels = ("contradiction", "entailment", "neutral")
  submission_name = "MNLI-m"
  tfds_name = "glue/mnli"
  tfds_text_features = ("premise", "hypothesis")
  tfds_splits = {"train": "train", "dev": "validation_matched", "test": "test_matched"}
  dev_file = "dev_matched.tsv"
  test_file = "test_matched.tsv"
  dev_set = "dev_matched"

  def get_train_examples(self, data_dir):
    return self._create_examples(
        self._read_tsv(os.path.join(data_dir, "train.tsv")), "train")

  def get_dev_examples(self, data_dir):
    return self._create_examples(
        self._read_tsv(os.path.join(data_dir, self.dev_file)), self.dev_set)

  def get_test_examples(self, data_dir):
    return self._create_examples(
        self._read_tsv(os.path.join(data_dir, self.test_file)), "test")

  def _create_examples(self, lines, set_type):
    examples = []
    for i, line in enumerate(lines):
      if i == 0:
        continue
      index = _text(line[0])
      label = "contradiction" if set_type == "test" else _text(line[-1])
      examples.append(_example(line, "%s-%s" % (set_type, index), _text(line[8]),
                               _text(line[9]), label, index=index))
    return examples


class MnliMismatchedProcessor(MnliProcessor):
  """MultiNLI with the mismatched (other genres) dev/test sets."""

  names = ("mnli_mismatched", "mnli-mm", "mnli_mm")
  submission_name = "MNLI-mm"
  tfds_splits = {"train": "train", "dev": "validation_mismatched",
                 "test": "test_mismatched"}
  dev_file = "dev_mismatched.tsv"
  test_file = "test_mismatched.tsv"
  dev_set = "dev_mismatched"


class _GlueFilesProcessor(DataProcessor):
  """GLUE tasks stored as train.tsv / dev.tsv / test.tsv in `data_dir`."""

  def get_train_examples(self, data_dir):
    return self._create_examples(
        self._read_tsv(os.path.join(data_dir, "train.tsv")), "train")

  def get_dev_examples(self, data_dir):
    return self._create_examples(
        self._read_tsv(os.path.join(data_dir, "dev.tsv")), "dev")

  def get_test_examples(self, data_dir):
    return self._create_examples(
        self._read_tsv(os.path.join(data_dir, "test.tsv")), "test")

  def _create_examples(self, lines, set_type):
    raise NotImplementedError()


class MrpcProcessor(_GlueFilesProcessor):
  """Microsoft Research Paraphrase Corpus (GLUE)."""

  names = ("mrpc",)
  labels = ("0", "1")
  submission_name = "MRPC"
  metrics = ("f1",)
  tfds_name = "glue/mrpc"
  tfds_text_features = ("sentence1", "sentence2")

  def _create_examples(self, lines, set_type):
    examples = []
    for i, line in enumerate(lines):
      if i == 0:
        continue
      label = "0" if set_type == "test" else _text(line[0])
      index = _text(line[0]) if set_type == "test" else None
      examples.append(_example(line, "%s-%s" % (set_type, i), _text(line[3]),
                               _text(line[4]), label, index=index))
    return examples


class ColaProcessor(_GlueFilesProcessor):
  """Corpus of Linguistic Acceptability (GLUE); only its test file has a header."""

  names = ("cola",)
  labels = ("0", "1")
  submission_name = "CoLA"
  metrics = ("mcc",)
  single_sentence = True
  tfds_name = "glue/cola"
  tfds_text_features = ("sentence",)

  def _create_examples(self, lines, set_type):
    examples = []
    for i, line in enumerate(lines):
      if set_type == "test":
        if i == 0:
          continue
        examples.append(_example(line, "test-%s" % i, _text(line[1]), None, "0",
                                 index=_text(line[0])))
      else:
        examples.append(_example(line, "%s-%s" % (set_type, i), _text(line[3]), None,
                                 _text(line[1])))
    return examples


class _HeaderedGlueProcessor(_GlueFilesProcessor):
  """A GLUE task whose files all have a header line; subclasses say where
  the texts and label are (columns of the train/dev files and of the test
  file, which has no label)."""

  text_columns = None
  test_text_columns = None

  label_column = -1

  def _label(self, line):
    return _text(line[self.label_column])

  def _create_examples(self, lines, set_type):
    columns = self.test_text_columns if set_type == "test" else self.text_columns
    examples = []
    for i, line in enumerate(lines):
      if i == 0:
        continue
      texts = [_text(line[c]) for c in columns]
      if set_type == "test":
        label = 0.0 if self.is_regression else self.get_labels()[0]
      else:
        label = self._label(line)
      examples.append(_example(line, "%s-%s" % (set_type, i), texts[0],
                               texts[1] if len(texts) > 1 else None, label,
                               index=_text(line[0]) if set_type == "test" else None))
    return examples


class Sst2Processor(_HeaderedGlueProcessor):
  """Stanford Sentiment Treebank, binary (GLUE)."""

  names = ("sst-2", "sst2")
  labels = ("0", "1")
  submission_name = "SST-2"
  single_sentence = True
  tfds_name = "glue/sst2"
  tfds_text_features = ("sentence",)
  text_columns = (0,)
  test_text_columns = (1,)


class QqpProcessor(_HeaderedGlueProcessor):
  """Quora Question Pairs (GLUE)."""

  names = ("qqp",)
  labels = ("0", "1")
  submission_name = "QQP"
  metrics = ("f1",)
  tfds_name = "glue/qqp"
  tfds_text_features = ("question1", "question2")
  text_columns = (3, 4)
  test_text_columns = (1, 2)


class QnliProcessor(_HeaderedGlueProcessor):
  """Question-answering NLI (GLUE)."""

  names = ("qnli",)
  labels = ("entailment", "not_entailment")
  submission_name = "QNLI"
  tfds_name = "glue/qnli"
  tfds_text_features = ("question", "sentence")
  text_columns = (1, 2)
  test_text_columns = (1, 2)


class RteProcessor(QnliProcessor):
  """Recognizing Textual Entailment (GLUE)."""

  names = ("rte",)
  submission_name = "RTE"
  tfds_name = "glue/rte"
  tfds_text_features = ("sentence1", "sentence2")


class WnliProcessor(_HeaderedGlueProcessor):
  """Winograd NLI (GLUE)."""

  names = ("wnli",)
  labels = ("0", "1")
  submission_name = "WNLI"
  tfds_name = "glue/wnli"
  tfds_text_features = ("sentence1", "sentence2")
  text_columns = (1, 2)
  test_text_columns = (1, 2)


class StsbProcessor(_HeaderedGlueProcessor):
  """Semantic Textual Similarity Benchmark (GLUE): a similarity score from 0
  to 5, so a regression task (one output, squared error)."""

  names = ("sts-b", "stsb")
  labels = (None,)
  submission_name = "STS-B"
  is_regression = True
  tfds_name = "glue/stsb"
  tfds_text_features = ("sentence1", "sentence2")
  text_columns = (7, 8)
  test_text_columns = (7, 8)

  def _label(self, line):
    value = line[self.label_column]
    try:
      return float(value)
    except ValueError:
      raise UserError("%s: the score %r is not a number." % (line.source, value)) from None


TASKS = [ColaProcessor, MnliProcessor, MnliMismatchedProcessor, MrpcProcessor,
         QnliProcessor, QqpProcessor, RteProcessor, Sst2Processor, StsbProcessor,
         WnliProcessor, XnliProcessor]
_BY_NAME = {name: task for task in TASKS for name in task.names}
# The original's name for the registry: task key -> processor class.
PROCESSORS = {task.names[0]: task for task in TASKS}


def get_processor(task_name, **kwargs):
  """The processor for `task_name` (case-insensitive)."""
  task = _BY_NAME.get((task_name or "").lower())
  if task is None:
    raise UserError("Task not found: %r. Known tasks (--task_name): %s." % (
        task_name, ", ".join(PROCESSORS)))
  return task(**kwargs)


def check_examples(examples, path_hint):
  if not examples:
    raise UserError("%s has no examples." % path_hint)
  return examples


def processor_for(task_name, data_dir, xnli_language="zh", tfds_manual_dir=None):
  """The processor for a task and --data_dir (a directory, or `tfds`)."""
  if data_dir == TFDS_DATA_DIR:
    return tfds.TfdsProcessor(get_processor(task_name), task_name,
                              manual_dir=tfds_manual_dir)
  kwargs = {"language": xnli_language} if task_name.lower() == "xnli" else {}
  return get_processor(task_name, **kwargs)
