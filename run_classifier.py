"""Fine-tunes BERT on a sentence(-pair) classification task, as the original.

  python run_classifier.py --task_name=MRPC --do_train --do_eval \\
    --data_dir=glue_data/MRPC --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \\
    --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

Writes what the original writes (train/eval/predict.tf_record,
eval_results.txt, test_results.tsv) plus the task's GLUE metric and a GLUE
submission file; `--export_dir` adds a SavedModel for TF Serving that takes
raw text. Re-running the same command resumes training from the last
checkpoint in --output_dir.
"""

import os
import sys

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from absl import flags
from absl import logging

from data_prep import classifier_data
from data_prep import cli
import modeling
from modeling import classification
from modeling import fine_tuning
from modeling import run_flags
from modeling import train_loop

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged: those shared with the
# other scripts (and the TPU flags) are defined in modeling/run_flags.py.
run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the .tsv files (or other data "
                    "files) for the task; `tfds` reads the task from "
                    "tensorflow-datasets instead.")
flags.DEFINE_string("task_name", None, "The name of the task to train.")
flags.DEFINE_integer("max_seq_length", 128,
                     "The maximum total input sequence length after WordPiece "
                     "tokenization. Sequences longer than this will be truncated, and "
                     "sequences shorter than this will be padded.")
run_flags.define_eval_and_predict_flags()

# Additions.
flags.DEFINE_string("xnli_language", "zh", "The XNLI language to train and evaluate on.")


def _write_records(examples, label_list, tokenizer, name):
  path = os.path.join(FLAGS.output_dir, name)
  classifier_data.file_based_convert_examples_to_features(
      examples, label_list, FLAGS.max_seq_length, tokenizer, path)
  return path


def _label_ids(examples, label_list, is_regression):
  if is_regression:
    return [float(e.label) for e in examples]
  label_map = classifier_data.label_map_of(label_list)
  return [label_map[e.label] for e in examples]


def _run_inference(strategy, model, examples, label_list, tokenizer, is_regression,
                   record_name, batch_flag):
  """Writes the records, runs the model over them; returns its outputs."""
  path = _write_records(examples, label_list, tokenizer, record_name)
  records = classifier_data.read_records(path, FLAGS.max_seq_length, is_regression)
  return fine_tuning.run_inference(strategy, model, records, len(examples), batch_flag,
                                   is_regression)


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy, config, tokenizer = fine_tuning.set_up()
  processor = classifier_data.processor_for(FLAGS.task_name, FLAGS.data_dir,
                                            FLAGS.xnli_language)
  label_list = processor.get_labels()
  is_regression = processor.is_regression
  with strategy.scope():
    model = modeling.BertClassifier(config, num_labels=1 if is_regression else len(label_list))

  if FLAGS.do_train:
    train_examples = classifier_data.check_examples(
        processor.get_train_examples(FLAGS.data_dir), "The training data")
    train_file = _write_records(train_examples, label_list, tokenizer, "train.tf_record")

    def train_dataset(per_replica_batch, input_context):
      return classifier_data.file_based_dataset(
          train_file, FLAGS.max_seq_length, per_replica_batch, is_training=True,
          drop_remainder=True, is_regression=is_regression, seed=FLAGS.seed,
          input_context=input_context)
    step = fine_tuning.train(strategy, model, classification.ClassifierLoss(is_regression),
                             len(train_examples), train_dataset)
  else:
    step = train_loop.load_for_inference(model, FLAGS.output_dir, FLAGS.init_checkpoint)

  if FLAGS.do_eval:
    eval_examples = classifier_data.check_examples(
        processor.get_dev_examples(FLAGS.data_dir), "The dev data")
    logging.info("***** Running evaluation *****")
    outputs = _run_inference(strategy, model, eval_examples, label_list, tokenizer,
                             is_regression, "eval.tf_record", "eval_batch_size")
    results = classification.eval_metrics(
        outputs, _label_ids(eval_examples, label_list, is_regression),
        FLAGS.eval_batch_size, FLAGS.task_name, is_regression)
    fine_tuning.report_eval_results(results, step)

  if FLAGS.do_predict:
    predict_examples = classifier_data.check_examples(
        processor.get_test_examples(FLAGS.data_dir), "The test data")
    logging.info("***** Running prediction *****")
    logits, _, is_real = _run_inference(
        strategy, model, predict_examples, label_list, tokenizer, is_regression,
        "predict.tf_record", "predict_batch_size")
    logits = logits[is_real > 0]
    values = logits if is_regression else classification.softmax(logits)
    classification.write_test_results(
        os.path.join(FLAGS.output_dir, "test_results.tsv"), values)
    if processor.submission_name:
      path = os.path.join(FLAGS.output_dir, processor.submission_name + ".tsv")
      classification.write_glue_submission(path, predict_examples, values, label_list,
                                           is_regression)
      logging.info("GLUE submission file: %s", path)

  if FLAGS.export_dir:
    from modeling import export  # Imports tensorflow-text, needed only here.
    export.export_classifier(model, FLAGS.export_dir, FLAGS.vocab_file,
                             FLAGS.do_lower_case, FLAGS.max_seq_length, label_list,
                             is_regression, sentence_pair=not processor.single_sentence)
    logging.info("Exported a SavedModel to %s", FLAGS.export_dir)


if __name__ == "__main__":
  for name in ("data_dir", "task_name", "vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)
