"""SWAG (multiple choice) as a kind of task for the driver
(tasks/driver.py): the four [CLS] context [SEP] ending [SEP] sequences of
each example, the choice model, eval_results.txt, predictions.tsv and the
export that takes the raw context, start and endings."""

import os

from absl import logging

import modeling
from modeling import heads
from modeling import inference
from plumbing.errors import UserError
from tasks import driver
from tasks import metrics
from tasks import swag


class SwagTask(driver.Task):
  """SWAG's CSV files in `data_dir`; `export`: driver.Export."""

  def __init__(self, data_dir, tokenizer, max_seq_length, export):
    self.data_dir, self.tokenizer = data_dir, tokenizer
    self.max_seq_length, self.export_settings = max_seq_length, export

  def examples(self, split):
    examples = swag.examples_of(self.data_dir, split)
    if not examples:
      raise UserError("%s has no examples." % os.path.join(self.data_dir, swag.FILES[split]))
    return examples

  def build_model(self, config, head_initializer="truncated_normal"):
    return modeling.BertMultipleChoice(config, num_choices=swag.NUM_CHOICES,
                                       head_initializer=head_initializer)

  def write_records(self, examples, path, split):
    swag.write_records(examples, self.tokenizer, self.max_seq_length, path)

  def example_spec(self, is_training):
    return swag.example_spec(self.max_seq_length)

  def outputs(self, strategy, model, records, examples, written, batch_size,
              trim_to_multiple):
    return inference.classifier_outputs(strategy, model, records, len(examples), batch_size,
                                        trim_to_multiple=trim_to_multiple)

  def results(self, examples, written, model_outputs, batch_size):
    return metrics.eval_metrics(model_outputs, [e.label for e in examples], batch_size)

  def write_predictions(self, examples, written, model_outputs, output_dir):
    logits, _, is_real = model_outputs
    path = os.path.join(output_dir, "predictions.tsv")
    swag.write_predictions(path, examples, metrics.probabilities(heads.SINGLE_LABEL,
                                                                 logits[is_real > 0]))
    logging.info("Predictions: %s", path)

  def export(self, model, export_dir):
    from serving import multiple_choice  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    e = self.export_settings
    multiple_choice.export_multiple_choice(model, export_dir, e.vocab_file, e.do_lower_case,
                                           self.max_seq_length, precision=e.precision,
                                           limits=e.limits)
