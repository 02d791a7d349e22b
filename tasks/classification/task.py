"""Sentence(-pair) classification as a kind of task for the driver
(tasks/driver.py): a GLUE-like processor's examples, the classifier (or a
window classifier for long texts), eval_results.txt with the task's GLUE
metric, test_results.tsv and the GLUE submission file, and the export that
takes raw text."""

import os

from absl import logging

import modeling
from modeling import heads
from modeling import inference
from plumbing import files
from tasks import driver
from tasks import metrics
from tasks.classification import features
from tasks.classification import glue
from tasks.classification import outputs
from tasks.classification import windows as windows_lib

_WHAT = {"train": "The training data", "dev": "The dev data", "test": "The test data"}


class ClassificationTask(driver.Task):
  """`processor`: a DataProcessor (tasks/classification/glue.py); `export`:
  driver.Export; `windows`: WindowSettings to classify long texts as
  windows, else None. `problem` (the classifier head's, modeling/heads.py)
  is what its labels say (features.problem_of)."""

  best_metric = staticmethod(outputs.glue_metric)

  def __init__(self, processor, data_dir, tokenizer, max_seq_length, export, windows=None,
               window_pooling="mean", gather_windows=True):
    self.processor, self.data_dir, self.tokenizer = processor, data_dir, tokenizer
    self.max_seq_length, self.export_settings = max_seq_length, export
    self.windows, self.window_pooling = windows, window_pooling
    self.gather_windows = gather_windows
    self.labels = processor.get_labels()
    self.problem = features.problem_of(self.labels)

  def write_run_records(self, output_dir):
    """What later commands (the conversion to Hugging Face's format, a later
    export) read of the run: its labels (none for a score), and its problem
    where the labels do not tell it (multi-label)."""
    if self.problem != heads.REGRESSION:
      files.write_labels(output_dir, self.labels)
    if self.problem != features.problem_of(self.labels):
      files.write_problem(output_dir, self.problem)

  def examples(self, split):
    get = {"train": self.processor.get_train_examples, "dev": self.processor.get_dev_examples,
           "test": self.processor.get_test_examples}[split]
    return glue.check_examples(get(self.data_dir), _WHAT[split])

  def build_model(self, config, head_initializer="truncated_normal"):
    if self.windows:
      return modeling.BertWindowClassifier(config, self.processor.num_labels,
                                           pooling=self.window_pooling,
                                           gather_windows=self.gather_windows,
                                           head_initializer=head_initializer,
                                           problem=self.problem)
    return modeling.BertClassifier(config, num_labels=self.processor.num_labels,
                                   head_initializer=head_initializer, problem=self.problem)

  def write_records(self, examples, path, split):
    if self.windows:
      windows_lib.write_windowed_records(examples, self.labels, self.max_seq_length,
                                         self.tokenizer, self.windows, path)
    else:
      features.file_based_convert_examples_to_features(examples, self.labels,
                                                       self.max_seq_length, self.tokenizer,
                                                       path, self.problem)

  def example_spec(self, is_training):
    return features.example_spec(self.max_seq_length, self.problem, len(self.labels),
                                 windows=self.windows.max_windows if self.windows else None)

  def outputs(self, strategy, model, records, examples, written, batch_size,
              trim_to_multiple):
    return inference.classifier_outputs(strategy, model, records, len(examples), batch_size,
                                        trim_to_multiple=trim_to_multiple)

  def results(self, examples, written, model_outputs, batch_size):
    regression = self.problem == heads.REGRESSION
    return metrics.eval_metrics(model_outputs,
                                features.label_ids_of(examples, self.labels, regression),
                                batch_size, self.processor.metrics, regression)

  def write_predictions(self, examples, written, model_outputs, output_dir):
    logits, _, is_real = model_outputs
    logits = logits[is_real > 0]
    regression = self.problem == heads.REGRESSION
    values = logits if regression else metrics.probabilities(self.problem, logits)
    outputs.write_test_results(os.path.join(output_dir, "test_results.tsv"), values)
    if self.processor.submission_name:
      path = os.path.join(output_dir, self.processor.submission_name + ".tsv")
      outputs.write_glue_submission(path, examples, values, self.labels, regression)
      logging.info("GLUE submission file: %s", path)

  def export(self, model, export_dir):
    from serving import classifier  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    e = self.export_settings
    classifier.export_classifier(
        model, export_dir, e.vocab_file, e.do_lower_case, self.max_seq_length, self.labels,
        sentence_pair=not self.processor.single_sentence, precision=e.precision,
        limits=e.limits, windows=self.windows)
