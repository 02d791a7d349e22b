"""Named-entity recognition as a kind of task for the driver
(tasks/driver.py): CoNLL or JSON Lines files (or tensorflow-datasets'
conll2003), a tagger on each word's first WordPiece, entity scores as the
CoNLL scorer counts them in eval_results.txt (dev) and test_results.txt
(test, with predictions.txt in the scheme read), the entities of raw text
lines (entities.jsonl), and the export that finds entities in raw text,
both cutting raw text into words as the training words were cut
(word_split.py)."""

import os

from absl import logging
import numpy as np
import tensorflow as tf

import modeling
from modeling import heads
from modeling import inference
from plumbing.errors import UserError
from plumbing import files
from plumbing import tf_example
from tasks import driver
from tasks import tfds_data
from tasks.ner import conll
from tasks.ner import features
from tasks.ner import json_lines
from tasks.ner import metrics
from tasks.ner import raw_text
from tasks.ner import word_split

LABELS_FILE = "labels.txt"  # In --output_dir: the tagger's labels, in order.
ENTITIES_FILE = "entities.jsonl"  # In --output_dir: the entities of raw text lines.
TEXT_RECORDS = "predict_text.tf_record"  # In --output_dir: their windows.
TFDS_NAME = "conll2003"


def tfds_sentences(split, data_dir=None, manual_dir=None):
  """A split of tensorflow-datasets' conll2003 as Sentences (its tags are
  IOB2)."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  builder = tfds.builder(TFDS_NAME, data_dir=data_dir)
  tfds_data.prepare(builder, TFDS_NAME, manual_dir, "a directory of CoNLL files")
  names = builder.info.features["ner"].feature.names
  sentences = []
  for index, record in enumerate(tfds.as_numpy(builder.as_dataset(split=split,
                                                                   shuffle_files=False))):
    sentences.append(conll.Sentence([w.decode("utf-8") for w in record["tokens"]],
                                    [names[t] for t in record["ner"]],
                                    "%s[%s] %d" % (TFDS_NAME, split, index)))
  return sentences


def read_labelled_file(path):
  """The sentences of a JSON Lines file (.jsonl, or .json as Hugging Face
  datasets' to_json writes them) or else a CoNLL file."""
  reader = json_lines if path.lower().endswith((".jsonl", ".json")) else conll
  return reader.read_sentences(path)


class NerTask(driver.Task):
  """CoNLL files in `data_dir` (or `tfds`), or each split's own file in
  `split_files` ({"train": path, ...}: --train_file, --dev_file,
  --test_file); `export`: driver.Export; `raw_text_words`: the split of raw
  text the user chose (word_split.py), or None. The labels are the IOB2
  tags of the training file (kept in output_dir's labels.txt, which runs
  without training read)."""

  best_metric = "eval_f1"
  along_sequence = ("tag_ids",)

  def __init__(self, data_dir, output_dir, tokenizer, max_seq_length, doc_stride, export,
               tfds_manual_dir=None, split_files=None, raw_text_words=None):
    if doc_stride < 1:
      raise UserError("--doc_stride=%d: a new window must start at least 1 WordPiece after "
                      "the last." % doc_stride)
    self.data_dir, self.output_dir, self.tokenizer = data_dir, output_dir, tokenizer
    self.max_seq_length, self.doc_stride = max_seq_length, doc_stride
    self.export_settings, self.tfds_manual_dir = export, tfds_manual_dir
    self.split_files = {split: path for split, path in (split_files or {}).items() if path}
    self.raw_text_words, self._word_split = raw_text_words, None
    self._labels = None

  def examples(self, split):
    if self.split_files or not self.data_dir:
      where = self.split_files.get(split)
      if not where:
        raise UserError("No %s file: give --%s_file%s." % (
            split, split, "" if self.split_files else " or --data_dir"))
      sentences = read_labelled_file(where)
    elif self.data_dir == tfds_data.DATA_DIR:
      sentences = tfds_sentences(split, manual_dir=self.tfds_manual_dir)
      where = "%s[%s]" % (TFDS_NAME, split)
    else:
      where = conll.split_file(self.data_dir, split)
      sentences = conll.read_sentences(where)
    if not sentences:
      raise UserError("%s has no sentences." % where)
    return sentences

  @property
  def labels(self):
    """The tagger's labels: labels.txt in output_dir, else the training
    file's tags (written to labels.txt)."""
    if self._labels is None:
      path = os.path.join(self.output_dir, LABELS_FILE)
      if files.exists(path):
        self._labels = files.read_text(path).split()
      else:
        self._labels = features.label_list_of(self.examples("train"))
        files.write_text(path, "".join(label + "\n" for label in self._labels))
    return self._labels

  def build_model(self, config, head_initializer="truncated_normal"):
    return modeling.BertTagger(config, len(self.labels), head_initializer=head_initializer)

  def write_records(self, sentences, path, split):
    if split == "train":  # A training run records the split raw text gets.
      self._word_split = word_split.choose(self.output_dir, self.raw_text_words,
                                           lambda: sentences, training=True)
    windows = features.windows_of_sentences(sentences, self.tokenizer, self.max_seq_length,
                                            self.doc_stride)
    features.write_records(sentences, windows, self.labels, self.max_seq_length, path)
    return windows

  def training_counts(self, sentences, windows):
    return [("Num sentences", len(sentences)), ("Num windows", len(windows))]

  def example_spec(self, is_training):
    return features.example_spec(self.max_seq_length)

  def outputs(self, strategy, model, records, sentences, windows, batch_size,
              trim_to_multiple):
    logging.info("  Num sentences = %d, windows = %d", len(sentences), len(windows))
    return token_logits(strategy, model, records, len(windows), batch_size,
                                  self.max_seq_length, trim_to_multiple)

  def _predicted(self, sentences, windows, logits):
    """(scheme, each sentence's predicted tags in it, the scorer's counts)."""
    scheme = conll.scheme_of(sentences)
    predicted = []
    for sentence, words in zip(sentences, features.word_predictions(sentences, windows,
                                                                    logits)):
      tags = [self.labels[label] for label, _ in words]
      predicted.append(tags if scheme == "IOB2" else
                       conll.from_iob2(conll.to_iob2(tags), scheme))
    counts = metrics.counts_of([s.tags for s in sentences], predicted, scheme)
    return scheme, predicted, counts

  def _loss(self, sentences, windows, logits):
    """The tagger head's loss over the labelled words, each read from the
    window it is predicted from."""
    label_map = {label: i for i, label in enumerate(self.labels)}
    rows, ids = [], []
    for window, window_logits in zip(windows, logits):
      gold = conll.to_iob2(sentences[window.sentence].tags)
      for position, word in zip(window.positions, window.words):
        rows.append(window_logits[position])
        ids.append(label_map.get(gold[word], 0))
    if not rows:
      return 0.0
    per_word = heads.TokenClassificationHead.loss_terms(
        {"token_logits": np.asarray(rows, np.float32)[None]}, {"tag_ids": np.asarray(ids)[None]})
    return float(np.mean(per_word.numpy(), dtype=np.float64))

  def results(self, sentences, windows, logits, batch_size):
    _, _, counts = self._predicted(sentences, windows, logits)
    logging.info("The CoNLL scorer's report:\n%s", metrics.report(counts))
    return dict(metrics.scores(counts), eval_loss=self._loss(sentences, windows, logits))

  def write_predictions(self, sentences, windows, logits, output_dir):
    scheme, predicted, counts = self._predicted(sentences, windows, logits)
    conll.write_predictions(os.path.join(output_dir, "predictions.txt"), sentences, predicted)
    scores = metrics.scores(counts)
    files.write_text(os.path.join(output_dir, "test_results.txt"), "".join(
        "%s = %s\n" % (key.replace("eval_", "test_", 1), scores[key]) for key in sorted(scores)))
    logging.info("Predictions (%s): %s; the CoNLL scorer's report:\n%s", scheme,
                 os.path.join(output_dir, "predictions.txt"), metrics.report(counts))

  @property
  def raw_text_split(self):
    """The split raw text gets (word_split.choose): the flag's, else this
    run's training words' or the run's record, else the training file's."""
    if self._word_split is None:
      self._word_split = word_split.choose(self.output_dir, self.raw_text_words,
                                           self._training_sentences_at_hand())
    return self._word_split

  def _training_sentences_at_hand(self):
    """A function returning the training sentences, or None without a
    training file."""
    try:
      sentences = self.examples("train")
    except UserError:  # None here: a run that only predicts or exports.
      return None
    return lambda: sentences

  def write_entities(self, strategy, model, texts, source, batch_size, trim_to_multiple):
    """Writes the entities of raw `texts` (the lines of the file `source`)
    to output_dir's entities.jsonl (raw_text.py); returns its path."""
    sentences, spans = raw_text.sentences_of(texts, source, self.raw_text_split)
    records = os.path.join(self.output_dir, TEXT_RECORDS)
    windows = self.write_records(sentences, records, "predict_text")
    logits = self.outputs(strategy, model,
                          tf_example.read_records(records, self.example_spec(False)),
                          sentences, windows,
                          batch_size, trim_to_multiple) if windows else []  # No word at all.
    predictions = features.word_predictions(sentences, windows, logits)
    path = os.path.join(self.output_dir, ENTITIES_FILE)
    raw_text.write_entities(path, texts, [
        raw_text.entities_of(text, text_spans, words, self.labels)
        for text, text_spans, words in zip(texts, spans, predictions)])
    logging.info("The entities of %d texts: %s", len(texts), path)
    return path

  def export(self, model, export_dir):
    from serving import tagger  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    e = self.export_settings
    tagger.export_tagger(model, export_dir, e.vocab_file, e.do_lower_case,
                         self.max_seq_length, self.doc_stride, self.labels, self.raw_text_split,
                         precision=e.precision, limits=e.limits)


def token_logits(strategy, model, records, num_records, batch_size, max_seq_length,
                 trim_to_multiple=None):
  """A tagger's float32 logits [records, max_seq_length, labels] over
  `records`, in input order (positions past a length-aware batch's longest
  row hold 0: no label sits there)."""
  def replica(features):
    # The inputs alone: the labels, which length-aware batches leave at
    # their padded length, would only make the model compute a loss.
    inputs = {name: features[name] for name in tf_example.MODEL_INPUTS}
    return (tf.cast(model(inputs, training=False)["token_logits"], tf.float32),)
  logging.info("  Batch size = %d", batch_size)
  (logits,) = inference.outputs_in_order(strategy, replica, records, num_records, batch_size,
                                         trim_to_multiple, sequence_outputs=(0,),
                                         padded_length=max_seq_length)
  return logits
