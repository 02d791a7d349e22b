"""SQuAD 1.1 and 2.0 as a kind of task for the driver (tasks/driver.py): the
original run_squad.py's training on windows of each document, predictions
on --predict_file (its test split: predictions.json and companions, and the
official metric when the file has answers), and the export that answers
(question, context) strings."""

import dataclasses
import os
import random

from absl import logging
import numpy as np
import tensorflow as tf

import modeling
from modeling import inference
from plumbing.errors import UserError
from tasks import driver
from tasks.squad import evaluate
from tasks.squad import examples as squad_examples
from tasks.squad import features as squad_features
from tasks.squad import predictions


@dataclasses.dataclass(frozen=True)
class SquadSettings(object):
  """run_squad.py's own flags, under their names."""
  train_file: str = None
  predict_file: str = None
  max_seq_length: int = 384
  doc_stride: int = 128
  max_query_length: int = 64
  n_best_size: int = 20
  max_answer_length: int = 30
  version_2_with_negative: bool = False
  null_score_diff_threshold: float = 0.0
  verbose_logging: bool = False


class SquadTask(driver.Task):
  """`settings`: SquadSettings; `export`: driver.Export."""

  # The original names the prediction features' file eval.tf_record.
  record_names = {"train": "train.tf_record", "test": "eval.tf_record"}

  def __init__(self, settings, tokenizer, export):
    self.settings, self.tokenizer, self.export_settings = settings, tokenizer, export

  def examples(self, split):
    s = self.settings
    if split == "train":
      examples = squad_examples.read_squad_examples(
          s.train_file, is_training=True, version_2_with_negative=s.version_2_with_negative)
      if not examples:
        raise UserError("%s has no usable training examples." % s.train_file)
      random.Random(12345).shuffle(examples)  # The original's pre-shuffle.
      return examples
    return squad_examples.read_squad_examples(
        s.predict_file, is_training=False, version_2_with_negative=s.version_2_with_negative)

  def build_model(self, config, head_initializer="truncated_normal"):
    return modeling.BertSpanPredictor(config, head_initializer=head_initializer)

  def _convert(self, examples, is_training, output_fn):
    s = self.settings
    squad_features.convert_examples_to_features(
        examples=examples, tokenizer=self.tokenizer, max_seq_length=s.max_seq_length,
        doc_stride=s.doc_stride, max_query_length=s.max_query_length,
        is_training=is_training, output_fn=output_fn)

  def write_records(self, examples, path, split):
    """Training: the number of features (windows); prediction: the features."""
    is_training = split == "train"
    kept = []
    with squad_features.FeatureWriter(path, is_training=is_training) as writer:
      def keep(feature):
        if not is_training:
          kept.append(feature)
        writer.process_feature(feature)
      self._convert(examples, is_training, keep)
    return writer.num_features if is_training else kept

  def training_counts(self, examples, written):
    return [("Num orig examples", len(examples)), ("Num split examples", written)]

  def example_spec(self, is_training):
    return squad_features.reading_spec(self.settings.max_seq_length, is_training)

  def outputs(self, strategy, model, records, examples, written, batch_size,
              trim_to_multiple):
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(written))
    return predictions.raw_results(*span_logits(
        strategy, model, records, len(written), batch_size, self.settings.max_seq_length,
        trim_to_multiple))

  def write_predictions(self, examples, written, results, output_dir):
    s = self.settings
    paths = [os.path.join(output_dir, name) for name in (
        "predictions.json", "nbest_predictions.json", "null_odds.json")]
    answers, _, null_odds = predictions.write_predictions(
        examples, written, results, s.n_best_size, s.max_answer_length,
        self.export_settings.do_lower_case, *paths,
        version_2_with_negative=s.version_2_with_negative,
        null_score_diff_threshold=s.null_score_diff_threshold,
        verbose_logging=s.verbose_logging)
    evaluate.write_scores(s.predict_file, answers,
                          null_odds if s.version_2_with_negative else None,
                          os.path.join(output_dir, "squad_eval.json"),
                          s.version_2_with_negative)

  def export(self, model, export_dir):
    from serving import squad  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    s, e = self.settings, self.export_settings
    squad.export_span_predictor(
        model, export_dir, e.vocab_file, e.do_lower_case, max_seq_length=s.max_seq_length,
        doc_stride=s.doc_stride, max_query_length=s.max_query_length,
        n_best_size=s.n_best_size, max_answer_length=s.max_answer_length,
        version_2_with_negative=s.version_2_with_negative,
        null_score_diff_threshold=s.null_score_diff_threshold, precision=e.precision,
        limits=e.limits)


def span_logits(strategy, model, records, num_features, batch_size, max_seq_length,
                trim_to_multiple=None):
  """unique_ids, start_logits, end_logits (numpy, input order) of a span model
  over `records`. Length-aware runs (`trim_to_multiple`) give no logits at
  the positions past a batch's longest row: they come back as -inf, which no
  answer can start or end at."""
  def replica(features):
    outputs = model(features, training=False)
    return (features["unique_ids"], tf.cast(outputs["start_logits"], tf.float32),
            tf.cast(outputs["end_logits"], tf.float32))
  logging.info("  Batch size = %d", batch_size)
  return inference.outputs_in_order(strategy, replica, records, num_features, batch_size,
                                    trim_to_multiple, sequence_outputs=(1, 2),
                                    padded_length=max_seq_length, fill=-np.inf)
