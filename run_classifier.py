"""Fine-tunes BERT on a sentence(-pair) classification task, as the original.

  python run_classifier.py --task_name=MRPC --do_train --do_eval \\
    --data_dir=glue_data/MRPC --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \\
    --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

  python run_classifier.py --train_file=train.csv --dev_file=dev.csv \\
    --text_a_column=review --label_column=sentiment --do_train --do_eval ...

Your own CSV, TSV or JSON Lines files take the place of --task_name and
--data_dir (tasks/classification/user_files.py says how they are read).
Writes what the original writes (train/eval/predict.tf_record,
eval_results.txt, test_results.tsv) plus the task's GLUE metric and a GLUE
submission file; `--export_dir` adds a SavedModel for TF Serving that takes
raw text. Re-running the same command resumes training from the last
checkpoint in --output_dir.
"""

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
import modeling
from plumbing import cli
from plumbing.errors import UserError
import run_flags
from tasks import driver
from tasks.classification import glue
from tasks.classification import task as classification
from tasks.classification import windows
# The original's public names, where its users look for them.
from tasks.classification.features import convert_examples_to_features  # noqa: F401
from tasks.classification.features import convert_single_example  # noqa: F401
from tasks.classification.features import file_based_convert_examples_to_features  # noqa: F401
from tasks.classification.features import InputExample  # noqa: F401
from tasks.classification.features import InputFeatures  # noqa: F401
from tasks.classification.features import PaddingInputExample  # noqa: F401
from tasks.classification.glue import ColaProcessor  # noqa: F401
from tasks.classification.glue import DataProcessor  # noqa: F401
from tasks.classification.glue import MnliProcessor  # noqa: F401
from tasks.classification.glue import MrpcProcessor  # noqa: F401
from tasks.classification.glue import XnliProcessor  # noqa: F401
from tasks.pair_packing import truncate_seq_pair as _truncate_seq_pair  # noqa: F401

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged: those shared with the
# other scripts (and the TPU flags) are defined in run_flags.py.
run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the .tsv files (or other data "
                    "files) for the task; `tfds` reads the task from "
                    "tensorflow-datasets instead.")
flags.DEFINE_string("task_name", None, "The name of the task to train.")
cli.define_max_seq_length()
run_flags.define_eval_and_predict_flags()

# Additions.
flags.DEFINE_string("xnli_language", "zh", "The XNLI language to train and evaluate on.")
run_flags.define_best_weights_flags("the task's GLUE metric")
flags.DEFINE_integer("window_stride", 0,
                     "Classify a text longer than --max_seq_length as overlapping windows "
                     "whose bodies start every this many tokens (a pair slides over its "
                     "second text): each window is classified and the text's logits "
                     "combine theirs (--window_pooling), in training, evaluation, "
                     "prediction and the export. 0: off, long texts are truncated, as "
                     "the original does.", lower_bound=0)
flags.DEFINE_integer("max_windows", 8,
                     "With --window_stride: windows per text at most; the tokens past the "
                     "last window are dropped (the log counts the texts cut). A batch runs "
                     "up to this many sequences per example.", lower_bound=1)
flags.DEFINE_enum("window_pooling", "mean", modeling.BertWindowClassifier.POOLINGS,
                  "With --window_stride: a text's logits are the mean of its windows' "
                  "logits, or label by label their maximum.")
# Your own files instead of a named task.
run_flags.define_user_file_flags()
flags.DEFINE_bool("regression", False,
                  "With --train_file: the labels are numbers and the model predicts a "
                  "score (squared error), evaluated by Pearson and Spearman correlation "
                  "as STS-B.")
flags.DEFINE_string("tfds_manual_dir", None,
                    "With --data_dir=tfds on a machine without network: a directory "
                    "holding the dataset's source files, already downloaded (the error "
                    "message names them).")

# What decides a run's result (plumbing/run_directory/settings.py), besides the shared ones.
SETTINGS = run_flags.TRAINING_SETTINGS + (
    "task_name", "data_dir", "xnli_language", "train_file", "text_a_column", "text_b_column",
    "label_column", "label_names", "regression", "window_stride", "max_windows",
    "window_pooling", "eval_every_steps", "early_stopping_patience")


def _processor():
  """The named task's processor, or one of the user's files."""
  if FLAGS.train_file or FLAGS.dev_file or FLAGS.test_file:
    if FLAGS.task_name or FLAGS.data_dir:
      raise UserError("Give either --task_name and --data_dir, or your own files "
                      "(--train_file, --dev_file, --test_file), not both.")
    return run_flags.user_files_processor(FLAGS, regression=FLAGS.regression)
  for name in ("task_name", "data_dir"):
    if not FLAGS[name].value:
      raise UserError("--%s is required (or give your own files with --train_file, "
                      "--dev_file, --test_file)." % name)
  for name in ("text_a_column", "text_b_column", "label_column", "label_names", "regression"):
    if FLAGS[name].value:
      raise UserError("--%s is for your own files (--train_file); --task_name=%s has its "
                      "own." % (name, FLAGS.task_name))
  return glue.processor_for(FLAGS.task_name, FLAGS.data_dir, FLAGS.xnli_language,
                            FLAGS.tfds_manual_dir)


def main(_):
  logging.set_verbosity(logging.INFO)
  # First: a changed run does not continue another; an earlier run's labels
  # are read only when it continues.
  recorded = run_flags.check_run_settings(FLAGS, SETTINGS)
  processor = _processor()  # Then a mistake in a data file shows before any work.
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS, recorded=recorded)
  task = classification.ClassificationTask(
      processor, FLAGS.data_dir, tokenizer, FLAGS.max_seq_length,
      run_flags.export_settings(FLAGS, tokenizer),
      windows=(windows.WindowSettings(FLAGS.window_stride, FLAGS.max_windows)
               if FLAGS.window_stride else None),
      window_pooling=FLAGS.window_pooling,
      gather_windows=not (FLAGS.use_xla or run_flags.on_tpu(FLAGS)))
  task.write_run_records(FLAGS.output_dir)
  driver.run(task, run_flags.driver_settings(FLAGS, recorded=recorded), strategy, config)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
