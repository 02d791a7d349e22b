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

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
import run_flags
from tasks import driver
from tasks.swag import task as swag_task

FLAGS = flags.FLAGS

run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("data_dir", None,
                    "The directory of SWAG's train.csv, val.csv and test.csv.")
cli.define_max_seq_length(help_text=(
    "The maximum total length of each [CLS] context [SEP] ending [SEP] "
    "sequence after WordPiece tokenization; longer pairs are truncated, "
    "shorter ones padded."))
run_flags.define_eval_and_predict_flags()  # Dev: val.csv; test: test.csv.

# What decides a run's result (plumbing/run_directory/settings.py), besides the shared ones.
SETTINGS = run_flags.TRAINING_SETTINGS + ("data_dir",)


def main(_):
  logging.set_verbosity(logging.INFO)
  recorded = run_flags.check_run_settings(FLAGS, SETTINGS)
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS, recorded=recorded)
  task = swag_task.SwagTask(FLAGS.data_dir, tokenizer, FLAGS.max_seq_length,
                            run_flags.export_settings(FLAGS, tokenizer))
  driver.run(task, run_flags.driver_settings(FLAGS, recorded=recorded), strategy, config)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("data_dir", "vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
