"""Fine-tunes BERT to give a text any number of labels (multi-label
classification), from your own CSV, TSV or JSON Lines files.

  python run_multi_label.py --do_train --do_eval --train_file=train.csv \\
    --dev_file=dev.csv --text_a_column=text --label_column=labels \\
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --output_dir=/tmp/topics/

The label column holds a text's labels joined by --label_separator (e.g.
`sports;politics`; empty: none). Files and columns are read as
run_classifier.py reads your own files; the flags and behaviour otherwise
are run_classifier.py's. Writes train/eval/predict.tf_record, labels.txt,
eval_results.txt (micro and macro F1, exact match, losses),
test_results.tsv (each label's probability) and test_predictions.tsv (each
text's labels: those whose probability reaches --threshold);
`--export_dir` a SavedModel that takes raw text and returns both
(tasks/multi_label.py).
"""

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
import run_flags
from tasks import driver
from tasks import multi_label

FLAGS = flags.FLAGS

run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
cli.define_max_seq_length(help_text=(
    "The maximum total input sequence length after WordPiece tokenization; "
    "longer texts are truncated."))
run_flags.define_eval_and_predict_flags()
run_flags.define_user_file_flags()
flags.DEFINE_string("label_separator", ";",
                    "What separates a text's labels in the label column.")
flags.DEFINE_float("threshold", 0.5,
                   "A label is chosen where its probability is at least this.",
                   lower_bound=0.0, upper_bound=1.0)
run_flags.define_best_weights_flags("micro F1")

# What decides a run's result (plumbing/run_directory/settings.py), besides the shared ones.
SETTINGS = run_flags.TRAINING_SETTINGS + (
    "train_file", "text_a_column", "text_b_column", "label_column", "label_names",
    "label_separator", "eval_every_steps", "early_stopping_patience")


def main(_):
  logging.set_verbosity(logging.INFO)
  # First: a changed run does not continue another; then a mistake in a data
  # file shows before any work.
  recorded = run_flags.check_run_settings(FLAGS, SETTINGS)
  processor = run_flags.user_files_processor(FLAGS, separator=FLAGS.label_separator)
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS, recorded=recorded)
  task = multi_label.MultiLabelTask(processor, tokenizer, FLAGS.max_seq_length,
                                    run_flags.export_settings(FLAGS, tokenizer), FLAGS.threshold)
  task.write_run_records(FLAGS.output_dir)
  driver.run(task, run_flags.driver_settings(FLAGS, recorded=recorded), strategy, config)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
