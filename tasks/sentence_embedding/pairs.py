"""Fine-tuning sentence vectors on pairs, as a kind of task for the driver
(tasks/driver.py): sentence-transformers' recipe of in-batch negatives
(MultipleNegativesRankingLoss, heads.SentenceEmbeddingHead) from the
user's files.

  * training: (anchor, positive) pairs, or (anchor, positive, negative)
    triplets, from a CSV, TSV or JSON Lines file; in each batch, every other
    positive (and every negative) is an anchor's negative;
  * evaluation: scored pairs (two texts and a number, STS-B's dev file is
    one): the Pearson and Spearman correlation of the two vectors' cosine
    similarity with the scores, as sentence-transformers'
    EmbeddingSimilarityEvaluator; the best weights by Spearman;
  * export: raw text in, the vector out (serving/embedding.py).

A text is [CLS] text [SEP], cut to max_seq_length WordPieces, as embed.py
cuts it; its vector is pooled and normalised as `settings` say (the model's
sentence-transformers files, tasks/sentence_embedding/settings.py), and
the run records them in those files' own format in its output directory,
where embed.py (--sentence_transformers_dir) and the conversion to a
Hugging Face directory find them.
"""

import dataclasses
import os
from typing import Optional

import numpy as np
import tensorflow as tf

import modeling
from modeling import inference
from modeling import pooling
from modeling.checkpoints import sentence_transformers
from plumbing.errors import UserError
from plumbing import files
from plumbing import tf_example
from plumbing import tfrecord
from tasks import driver
from tasks import metrics
from tasks import pair_packing
from tasks import table_files

# The columns read when none are named: the first set a file's header holds.
TRAIN_COLUMNS = (("anchor", "positive", "negative"), ("anchor", "positive"),
                 ("sentence1", "sentence2"))
DEV_COLUMNS = (("sentence1", "sentence2", "score"), ("sentence1", "sentence2", "label"))
_RECORD_BATCH = 4096


@dataclasses.dataclass(frozen=True)
class Example(object):
  """The texts of one row (anchor, positive[, negative]; or a scored pair's
  two), its score (dev only) and where it came from ("path:line")."""
  texts: tuple
  score: Optional[float]
  source: str


def read_training_file(path, columns=None, flag="--train_file"):
  """The pairs or triplets of `path` (columns: 2 or 3, header names or
  indexes; None: TRAIN_COLUMNS)."""
  if columns is not None and len(columns) not in (2, 3):
    raise UserError("--train_columns=%s: name 2 columns (anchor, positive) or 3 (anchor, "
                    "positive, negative)." % ",".join(map(str, columns)))
  _, rows = table_files.read_fields(path, flag, columns, TRAIN_COLUMNS)
  if not rows:
    raise UserError("%s=%s has no rows." % (flag, path))
  return [Example(texts, None, source) for source, texts in rows]


def read_scored_file(path, columns=None, flag="--dev_file"):
  """The scored pairs of `path` (columns: text, text, score; None:
  DEV_COLUMNS)."""
  if columns is not None and len(columns) != 3:
    raise UserError("--dev_columns=%s: name 3 columns (the two texts, then the score)." %
                    ",".join(map(str, columns)))
  _, rows = table_files.read_fields(path, flag, columns, DEV_COLUMNS)
  if not rows:
    raise UserError("%s=%s has no rows." % (flag, path))
  examples = []
  for source, (a, b, score) in rows:
    try:
      examples.append(Example((a, b), float(score), source))
    except ValueError:
      raise UserError("%s: the score %r is not a number." % (source, score)) from None
  return examples


def record_settings(output_dir, hidden_size, settings):
  """Writes the vectors' settings (tasks/sentence_embedding/settings.Settings)
  into `output_dir` as sentence-transformers' files, which embed.py and the
  conversion to a Hugging Face directory read."""
  for name, text in sentence_transformers.contents(
      hidden_size, settings.pooling, settings.normalize, settings.max_seq_length).items():
    path = os.path.join(output_dir, name)
    files.makedirs(os.path.dirname(path))
    files.write_text(path, text)


def example_spec(texts, seq_length, scored):
  """The records: each row's texts as [texts, seq_length] (and its score)."""
  shape = [texts, seq_length]
  features = [("input_ids", "int64", shape), ("input_mask", "int64", shape),
              ("segment_ids", "int64", shape), ("is_real_example", "int64", [])]
  if scored:
    features.append(("score", "float32", []))
  return tf_example.ExampleSpec(sorted(features))


def cosine(vectors):
  """The cosine similarity of each row's two vectors [batch, 2, hidden]."""
  unit = pooling.l2_normalized(vectors)
  return tf.reduce_sum(unit[:, 0] * unit[:, 1], axis=-1)


class PairsTask(driver.Task):
  """`train` and `dev`: Examples (read_training_file, read_scored_file; None
  when not given); `settings`: the vectors' Settings; `scale`: the loss's
  (sentence-transformers' default, 20: a temperature of 0.05); `export`:
  driver.Export."""

  best_metric = "eval_spearman"

  def __init__(self, train, dev, tokenizer, settings, export, scale=20.0):
    self._examples = {"train": train, "dev": dev}
    self.tokenizer, self.settings, self.export_settings = tokenizer, settings, export
    self.scale = scale
    self.train_texts = len(train[0].texts) if train else 2

  def examples(self, split):
    if not self._examples.get(split):
      flag = {"train": "--train_file", "dev": "--dev_file"}.get(split)
      raise UserError("%s is needed for this run." % flag if flag else
                      "This task predicts nothing: embed.py writes the vectors of texts.")
    return self._examples[split]

  def build_model(self, config, head_initializer="truncated_normal"):
    del head_initializer  # The head has no weights.
    return modeling.BertEmbedder(config, pooling=self.settings.pooling,
                                 normalize=self.settings.normalize, scale=self.scale)

  def training_counts(self, examples, written):
    return [("Num examples", len(examples)), ("Texts per example", self.train_texts)]

  def write_records(self, examples, path, split):
    scored = split != "train"
    spec = example_spec(len(examples[0].texts), self.settings.max_seq_length, scored)
    with tfrecord.atomic_writers([path]) as (writer,):
      for start in range(0, len(examples), _RECORD_BATCH):
        chunk = examples[start:start + _RECORD_BATCH]
        ints, floats = spec.empty_columns(len(chunk))
        columns = [pair_packing.pack_batch(self.tokenizer, [e.texts[i] for e in chunk],
                                           [None] * len(chunk), self.settings.max_seq_length)
                   for i in range(len(chunk[0].texts))]
        for name, values in zip(("input_ids", "input_mask", "segment_ids"), zip(*columns)):
          ints[:, spec.int_columns[name]] = np.stack(values, axis=1).reshape(len(chunk), -1)
        ints[:, spec.int_columns["is_real_example"]] = 1
        if scored:
          floats[:, spec.float_columns["score"]] = np.reshape([e.score for e in chunk], (-1, 1))
        writer.write_batch(*spec.encode_batch(ints, floats))

  def example_spec(self, is_training):
    """Training records hold the training file's texts per row, the others
    a scored pair."""
    return example_spec(self.train_texts if is_training else 2, self.settings.max_seq_length,
                        scored=not is_training)

  def outputs(self, strategy, model, records, examples, written, batch_size,
              trim_to_multiple):
    """(cosine similarity, is_real_example) of every scored pair."""

    def replica(features):
      vectors = model(features, training=False)["sentence_embedding"]
      return cosine(vectors), features["is_real_example"]
    return inference.outputs_in_order(strategy, replica, records, len(examples), batch_size,
                                      trim_to_multiple)

  def results(self, examples, written, model_outputs, batch_size):
    similarity, is_real = model_outputs
    similarity = similarity[is_real > 0]
    scores = [e.score for e in examples]
    return {"eval_pearson": np.float32(metrics.pearson(similarity, scores)),
            "eval_spearman": np.float32(metrics.spearman(similarity, scores))}

  def write_predictions(self, examples, written, model_outputs, output_dir):
    raise UserError("This task predicts nothing: embed.py writes the vectors of texts.")

  def export(self, model, export_dir):
    from serving import embedding  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    e, s = self.export_settings, self.settings
    embedding.export_embedder(model.bert, export_dir, e.vocab_file, e.do_lower_case,
                              s.max_seq_length, s.pooling, s.normalize,
                              precision=e.precision, limits=e.limits)
