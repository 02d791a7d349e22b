"""Sentence(-pair) classification data: GLUE/XNLI readers, features, records.

The names and behaviour of the original `run_classifier.py` are kept:
`InputExample`, `PaddingInputExample`, `InputFeatures`, the processors
(`XnliProcessor`, `MnliProcessor`, `MrpcProcessor`, `ColaProcessor`) with the
original's columns, header handling, guids and label lists,
`convert_single_example` ([CLS] A [SEP] B [SEP], longest-first truncation,
zero padding) and `file_based_convert_examples_to_features`, whose records are
those the original writes. Beyond the original: MNLI mismatched, SST-2, QQP,
QNLI, RTE, WNLI and STS-B (a regression task), every task also from
tensorflow-datasets (`--data_dir=tfds`), and errors that name the file and
line instead of an IndexError or KeyError deep inside the conversion.
"""

import collections
import csv
import os

from absl import logging

from data_prep import text_io
from data_prep import tokenization
from data_prep.errors import UserError

TFDS_DATA_DIR = "tfds"


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
  if not text_io.exists(input_file):
    raise UserError("%s: no such file. Check --data_dir and --task_name." % input_file)
  lines = []
  for line_number, text in text_io.iter_text_lines(input_file):
    fields = next(csv.reader([text], delimiter="\t", quotechar=quotechar), [])
    lines.append(_Line(fields, input_file, line_number))
  return lines


class DataProcessor(object):
  """Reads one task's train/dev/test files into InputExamples."""

  # Name of the GLUE submission file for the test predictions; None where
  # the task is not part of GLUE.
  submission_name = None
  is_regression = False
  single_sentence = False  # No text_b: the export takes text_a alone.

  def get_train_examples(self, data_dir):
    raise NotImplementedError()

  def get_dev_examples(self, data_dir):
    raise NotImplementedError()

  def get_test_examples(self, data_dir):
    raise NotImplementedError()

  def get_labels(self):
    raise NotImplementedError()

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

  def get_labels(self):
    return ["contradiction", "entailment", "neutral"]


class MnliProcessor(DataProcessor):
  """MultiNLI (GLUE), matched dev/test sets as in the original."""

  submission_name = "MNLI-m"
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

  def get_labels(self):
    return ["contradiction", "entailment", "neutral"]

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

  submission_name = "MNLI-mm"
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

  submission_name = "MRPC"

  def get_labels(self):
    return ["0", "1"]

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

  submission_name = "CoLA"
  single_sentence = True

  def get_labels(self):
    return ["0", "1"]

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

  submission_name = "SST-2"
  single_sentence = True
  text_columns = (0,)
  test_text_columns = (1,)

  def get_labels(self):
    return ["0", "1"]


class QqpProcessor(_HeaderedGlueProcessor):
  """Quora Question Pairs (GLUE)."""

  submission_name = "QQP"
  text_columns = (3, 4)
  test_text_columns = (1, 2)

  def get_labels(self):
    return ["0", "1"]


class QnliProcessor(_HeaderedGlueProcessor):
  """Question-answering NLI (GLUE)."""

  submission_name = "QNLI"
  text_columns = (1, 2)
  test_text_columns = (1, 2)

  def get_labels(self):
    return ["entailment", "not_entailment"]


class RteProcessor(QnliProcessor):
  """Recognizing Textual Entailment (GLUE)."""

  submission_name = "RTE"


class WnliProcessor(_HeaderedGlueProcessor):
  """Winograd NLI (GLUE)."""

  submission_name = "WNLI"
  text_columns = (1, 2)
  test_text_columns = (1, 2)

  def get_labels(self):
    return ["0", "1"]


class StsbProcessor(_HeaderedGlueProcessor):
  """Semantic Textual Similarity Benchmark (GLUE): a similarity score from 0
  to 5, so a regression task (one output, squared error)."""

  submission_name = "STS-B"
  is_regression = True
  text_columns = (7, 8)
  test_text_columns = (7, 8)

  def get_labels(self):
    return [None]

  def _label(self, line):
    value = line[self.label_column]
    try:
      return float(value)
    except ValueError:
      raise UserError("%s: the score %r is not a number." % (line.source, value)) from None


PROCESSORS = collections.OrderedDict([
    ("cola", ColaProcessor),
    ("mnli", MnliProcessor),
    ("mnli_mismatched", MnliMismatchedProcessor),
    ("mrpc", MrpcProcessor),
    ("qnli", QnliProcessor),
    ("qqp", QqpProcessor),
    ("rte", RteProcessor),
    ("sst-2", Sst2Processor),
    ("sts-b", StsbProcessor),
    ("wnli", WnliProcessor),
    ("xnli", XnliProcessor),
])
_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "mnli-mm": "mnli_mismatched",
            "mnli_mm": "mnli_mismatched", "mnli-m": "mnli", "mnli_matched": "mnli"}


def get_processor(task_name, **kwargs):
  """The processor for `task_name` (case-insensitive)."""
  name = (task_name or "").lower()
  name = _ALIASES.get(name, name)
  if name not in PROCESSORS:
    raise UserError("Task not found: %r. Known tasks (--task_name): %s." % (
        task_name, ", ".join(PROCESSORS)))
  return PROCESSORS[name](**kwargs)


def check_examples(examples, path_hint):
  if not examples:
    raise UserError("%s has no examples." % path_hint)
  return examples


# ---------------------------------------------------------------------------
# tensorflow-datasets

# task -> (tfds name, {our split: tfds split}, text features)
_TFDS_TASKS = {
    "cola": ("glue/cola", ("sentence",)),
    "mnli": ("glue/mnli", ("premise", "hypothesis")),
    "mnli_mismatched": ("glue/mnli", ("premise", "hypothesis")),
    "mrpc": ("glue/mrpc", ("sentence1", "sentence2")),
    "qnli": ("glue/qnli", ("question", "sentence")),
    "qqp": ("glue/qqp", ("question1", "question2")),
    "rte": ("glue/rte", ("sentence1", "sentence2")),
    "sst-2": ("glue/sst2", ("sentence",)),
    "sts-b": ("glue/stsb", ("sentence1", "sentence2")),
    "wnli": ("glue/wnli", ("sentence1", "sentence2")),
}


class TfdsProcessor(DataProcessor):
  """A task's examples from tensorflow-datasets instead of TSV files.

  The label names of the dataset are mapped onto the task's label list, so a
  model fine-tuned on either source has the same label ids; guids are
  `<split>-<idx>` and GLUE test indices are the dataset's `idx`.
  """

  def __init__(self, task_name, data_dir=None):
    self.task = get_processor(task_name)
    name = _ALIASES.get(task_name.lower(), task_name.lower())
    if name not in _TFDS_TASKS:
      raise UserError("--data_dir=%s: task %r is not available from "
                      "tensorflow-datasets; pass a directory of its files." %
                      (TFDS_DATA_DIR, task_name))
    self.dataset, self.text_features = _TFDS_TASKS[name]
    self.splits = {"train": "train", "dev": "validation", "test": "test"}
    if name == "mnli":
      self.splits.update(dev="validation_matched", test="test_matched")
    elif name == "mnli_mismatched":
      self.splits.update(dev="validation_mismatched", test="test_mismatched")
    self.data_dir = data_dir
    self.submission_name = self.task.submission_name
    self.is_regression = self.task.is_regression
    self.single_sentence = self.task.single_sentence

  def get_labels(self):
    return self.task.get_labels()

  def get_train_examples(self, data_dir=None):
    return self._examples("train")

  def get_dev_examples(self, data_dir=None):
    return self._examples("dev")

  def get_test_examples(self, data_dir=None):
    return self._examples("test")

  def _label(self, value, names, set_type):
    if self.is_regression:
      return 0.0 if set_type == "test" else float(value)
    labels = self.get_labels()
    if set_type == "test" or value < 0:
      return labels[0]
    name = names[value]
    if name in labels:
      return name
    return labels[int(value)]  # Binary tasks: label names "0"/"1" are ids.

  def _examples(self, set_type):
    import tensorflow_datasets as tfds
    split = self.splits[set_type]
    builder = tfds.builder(self.dataset, data_dir=self.data_dir)
    builder.download_and_prepare()
    label_feature = builder.info.features["label"]
    names = getattr(label_feature, "names", None)
    examples = []
    for record in tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)):
      texts = [_text(record[f]) for f in self.text_features]
      index = int(record["idx"])
      examples.append(InputExample(
          guid="%s-%d" % (set_type, index), text_a=texts[0],
          text_b=texts[1] if len(texts) > 1 else None,
          label=self._label(record["label"], names, set_type),
          source="%s[%s] idx %d" % (self.dataset, split, index),
          index=str(index) if set_type == "test" else None))
    return examples


def processor_for(task_name, data_dir, xnli_language="zh"):
  """The processor for a task and --data_dir (a directory, or `tfds`)."""
  if data_dir == TFDS_DATA_DIR:
    return TfdsProcessor(task_name)
  kwargs = {"language": xnli_language} if task_name.lower() == "xnli" else {}
  return get_processor(task_name, **kwargs)


# ---------------------------------------------------------------------------
# Features

def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Shortens the pair in place to at most `max_length` tokens in total,
  one token at a time from the end of the longer one (B on ties): a short
  text keeps all its tokens, which carry more per token."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


_truncate_seq_pair = truncate_seq_pair


def label_map_of(label_list):
  return {label: i for i, label in enumerate(label_list)}


def _label_id(example, label_map, is_regression):
  if is_regression:
    return float(example.label)
  try:
    return label_map[example.label]
  except KeyError:
    raise UserError("%s: unknown label %r; the task's labels are %s." % (
        example.source or example.guid, example.label,
        ", ".join(repr(k) for k in label_map))) from None


def pack_tokens(tokenizer, text_a, text_b, max_seq_length):
  """(tokens, segment_ids) of [CLS] A [SEP] (B [SEP]), unpadded: the pair
  truncated longest-first, or A alone cut to fit when B is empty or has no
  tokens."""
  tokens_a = tokenizer.tokenize(text_a)
  tokens_b = tokenizer.tokenize(text_b) if text_b else None
  if tokens_b:
    truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
  else:
    tokens_a = tokens_a[:max_seq_length - 2]
  tokens = [tokenization.CLS_TOKEN] + tokens_a + [tokenization.SEP_TOKEN]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + [tokenization.SEP_TOKEN]
    segment_ids += [1] * (len(tokens_b) + 1)
  return tokens, segment_ids


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
  """Packs an example as [CLS] A [SEP] (B [SEP]), zero-padded to max_seq_length.

  Segment ids are 0 up to the first [SEP] and 1 for B and its [SEP].
  A regression task (label_list [None]) keeps its float label.
  """
  is_regression = label_list == [None]
  if isinstance(example, PaddingInputExample):
    return InputFeatures(input_ids=[0] * max_seq_length, input_mask=[0] * max_seq_length,
                         segment_ids=[0] * max_seq_length,
                         label_id=0.0 if is_regression else 0, is_real_example=False)
  label_id = _label_id(example, label_map_of(label_list), is_regression)
  tokens, segment_ids = pack_tokens(tokenizer, example.text_a, example.text_b,
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


def pad_to_batch_multiple(examples, batch_size):
  """`examples` followed by PaddingInputExamples up to a multiple of batch_size."""
  padding = -len(examples) % batch_size
  return list(examples) + [PaddingInputExample() for _ in range(padding)]


def serialize_features(feature):
  """The tf.train.Example bytes the original writes for one InputFeatures."""
  import tensorflow as tf

  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

  features = collections.OrderedDict()
  features["input_ids"] = ints(feature.input_ids)
  features["input_mask"] = ints(feature.input_mask)
  features["segment_ids"] = ints(feature.segment_ids)
  if isinstance(feature.label_id, float):
    features["label_ids"] = tf.train.Feature(
        float_list=tf.train.FloatList(value=[feature.label_id]))
  else:
    features["label_ids"] = ints([feature.label_id])
  features["is_real_example"] = ints([int(feature.is_real_example)])
  return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def file_based_convert_examples_to_features(examples, label_list, max_seq_length,
                                            tokenizer, output_file):
  """Writes one record per example to `output_file` (atomically: a failure
  leaves no file behind)."""
  from data_prep import tfrecord_io
  with tfrecord_io.atomic_writers([output_file]) as (writer,):
    batch = []
    for ex_index, example in enumerate(examples):
      if ex_index % 10000 == 0:
        logging.info("Writing example %d of %d", ex_index, len(examples))
      feature = convert_single_example(ex_index, example, label_list, max_seq_length,
                                       tokenizer)
      batch.append(serialize_features(feature))
      if len(batch) == 4096:
        writer.write_records(batch)
        batch = []
    writer.write_records(batch)


def name_to_features(seq_length, is_regression=False):
  import tensorflow as tf
  return {
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }


def read_records(input_file, seq_length, is_regression=False, is_training=False, seed=0,
                 input_context=None, spec=None):
  """Feature dicts (int32 ids) from a file the writer above made (or, with
  `spec`, another fine-tuning task's records).

  Training reads the records repeated, then shuffled in a buffer of 100 as
  the original did, but seeded, so a resumed run sees the same batches.
  """
  import tensorflow as tf
  from data_prep import pretraining_dataset
  spec = spec or name_to_features(seq_length, is_regression)
  d = tf.data.TFRecordDataset(input_file)
  if input_context is not None and input_context.num_input_pipelines > 1:
    d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  if is_training:
    d = d.repeat().shuffle(buffer_size=100, seed=seed)
  return d.map(lambda r: pretraining_dataset.decode_record(r, spec),
               num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def file_based_dataset(input_file, seq_length, batch_size, is_training,
                       drop_remainder, is_regression=False, seed=0, input_context=None):
  """Batches of `read_records`."""
  import tensorflow as tf
  d = read_records(input_file, seq_length, is_regression, is_training, seed, input_context)
  return d.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)

