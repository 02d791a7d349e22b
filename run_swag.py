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
(modeling/export.py).
"""

import os
import sys

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from absl import flags
from absl import logging

from data_prep import cli
from data_prep import swag_data
from data_prep.errors import UserError
import modeling
from modeling import classification
from modeling import fine_tuning
from modeling import run_flags
from modeling import train_loop

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
  examples = swag_data.examples_of(FLAGS.data_dir, split)
  if not examples:
    raise UserError("%s has no examples." % os.path.join(FLAGS.data_dir,
                                                         swag_data.FILES[split]))
  return examples


def _write_records(examples, tokenizer, name):
  path = os.path.join(FLAGS.output_dir, name)
  swag_data.write_records(examples, tokenizer, FLAGS.max_seq_length, path)
  return path


def _run_inference(strategy, model, examples, tokenizer, record_name, batch_flag):
  path = _write_records(examples, tokenizer, record_name)
  records = swag_data.read_records(path, FLAGS.max_seq_length)
  return fine_tuning.run_inference(strategy, model, records, len(examples), batch_flag)


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy, config, tokenizer = fine_tuning.set_up()
  with strategy.scope():
    model = modeling.BertMultipleChoice(config, num_choices=swag_data.NUM_CHOICES)

  if FLAGS.do_train:
    train_examples = _examples("train")
    train_file = _write_records(train_examples, tokenizer, "train.tf_record")

    def train_dataset(per_replica_batch, input_context):
      return swag_data.dataset(train_file, FLAGS.max_seq_length, per_replica_batch,
                               is_training=True, seed=FLAGS.seed,
                               input_context=input_context)
    step = fine_tuning.train(strategy, model, classification.ClassifierLoss(),
                             len(train_examples), train_dataset)
  else:
    step = train_loop.load_for_inference(model, FLAGS.output_dir, FLAGS.init_checkpoint)

  if FLAGS.do_eval:
    eval_examples = _examples("dev")
    logging.info("***** Running evaluation *****")
    outputs = _run_inference(strategy, model, eval_examples, tokenizer, "eval.tf_record",
                             "eval_batch_size")
    results = classification.eval_metrics(outputs, [e.label for e in eval_examples],
                                          FLAGS.eval_batch_size)
    fine_tuning.report_eval_results(results, step)

  if FLAGS.do_predict:
    predict_examples = _examples("test")
    logging.info("***** Running prediction *****")
    logits, _, is_real = _run_inference(strategy, model, predict_examples, tokenizer,
                                        "predict.tf_record", "predict_batch_size")
    path = os.path.join(FLAGS.output_dir, "predictions.tsv")
    swag_data.write_predictions(path, predict_examples,
                                classification.softmax(logits[is_real > 0]))
    logging.info("Predictions: %s", path)

  if FLAGS.export_dir:
    from modeling import export  # Imports tensorflow-text, needed only here.
    export.export_multiple_choice(model, FLAGS.export_dir, FLAGS.vocab_file,
                                  FLAGS.do_lower_case, FLAGS.max_seq_length)
    logging.info("Exported a SavedModel to %s", FLAGS.export_dir)


if __name__ == "__main__":
  for name in ("data_dir", "vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)
