"""Fine-tunes BERT on SWAG (multiple choice), as the BERT paper describes it.

  python run_swag.py --do_train --do_eval --data_dir=swagaf/data \\
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --max_seq_length=128 --train_batch_size=16 --learning_rate=2e-5 \\
    --num_train_epochs=3.0 --output_dir=/tmp/swag_output/

The paper fine-tuned 3 epochs at learning rate 2e-5, batch 16. The original
release has no SWAG script: this one has run_classifier.py's flags and
behaviour (strategies, checkpoints, resuming when run again) and writes
train/eval/predict.tf_record, eval_results.txt (eval_accuracy, eval_loss,
loss, global_step) and predictions.tsv (id, predicted ending, the four
probabilities) for test.csv. `--export_dir` writes a SavedModel for TF
Serving that takes the raw context, start and four endings
(serving/multiple_choice.py).
"""

import os

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
import modeling
from modeling import losses
from modeling import training
from plumbing import cli
from plumbing.errors import UserError
from plumbing import tf_example
import run_flags
from tasks.classification import outputs
from tasks import swag

FLAGS = flags.FLAGS

run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("data_dir", None,
                    "The directory of SWAG's train.csv, val.csv and test.csv.")
flags.DEFINE_integer("max_seq_length", 128,
                     "The maximum total length of each [CLS] context [SEP] ending [SEP] "
                     "sequence after WordPiece tokenization; longer pairs are truncated, "
                     "shorter ones padded.")
run_flags.define_eval_and_predict_flags()  # Dev: val.csv; test: test.csv.


def _examples(split):
  examples = swag.examples_of(FLAGS.data_dir, split)
  if not examples:
    raise UserError("%s has no examples." % os.path.join(FLAGS.data_dir, swag.FILES[split]))
  return examples


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = modeling.BertMultipleChoice(config, num_choices=swag.NUM_CHOICES)
  seq = FLAGS.max_seq_length

  def write_records(examples, path):
    swag.write_records(examples, tokenizer, seq, path)

  def model_outputs(examples, record_name, batch_flag):
    return run_flags.classifier_outputs(
        FLAGS, strategy, model, examples, write_records,
        lambda path: swag.read_records(path, seq), record_name, batch_flag)

  if FLAGS.do_train:
    examples = _examples("train")
    path = os.path.join(FLAGS.output_dir, "train.tf_record")
    write_records(examples, path)

    def dataset_fn(per_replica_batch, input_context):
      records = swag.read_records(path, seq, is_training=True, seed=FLAGS.seed,
                                  input_context=input_context)
      return tf_example.batched(records, per_replica_batch, drop_remainder=True,
                                trim_to_multiple=run_flags.trim_to_multiple(FLAGS),
                                group_by_length=FLAGS.group_by_length)
    step = training.train(strategy, model, losses.ClassifierLoss(), dataset_fn,
                          run_flags.fine_tuning_settings(FLAGS, len(examples)),
                          counts=[("Num examples", len(examples))], deferred=deferred).step
  else:
    step = training.load_for_inference(model, FLAGS.output_dir, FLAGS.init_checkpoint,
                                       deferred)

  if FLAGS.do_eval:
    examples = _examples("dev")
    logging.info("***** Running evaluation *****")
    results = outputs.eval_metrics(
        model_outputs(examples, "eval.tf_record", "eval_batch_size"),
        [e.label for e in examples], FLAGS.eval_batch_size)
    training.report_eval_results(FLAGS.output_dir, results, step)

  if FLAGS.do_predict:
    examples = _examples("test")
    logging.info("***** Running prediction *****")
    logits, _, is_real = model_outputs(examples, "predict.tf_record", "predict_batch_size")
    path = os.path.join(FLAGS.output_dir, "predictions.tsv")
    swag.write_predictions(path, examples, outputs.softmax(logits[is_real > 0]))
    logging.info("Predictions: %s", path)

  if FLAGS.export_dir:
    from serving import multiple_choice  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    multiple_choice.export_multiple_choice(model, FLAGS.export_dir, FLAGS.vocab_file,
                                           FLAGS.do_lower_case, FLAGS.max_seq_length,
                                           precision=FLAGS.export_precision,
                                           limits=run_flags.request_limits(FLAGS))
    logging.info("Exported a SavedModel to %s", FLAGS.export_dir)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("data_dir", "vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
