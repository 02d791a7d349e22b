"""Fine-tunes BERT on SQuAD 1.1 / 2.0 and predicts answers, as the original.

  python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \\
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train \\
    --train_file=train-v1.1.json --do_predict --predict_file=dev-v1.1.json \\
    --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \\
    --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

Writes what the original writes (train.tf_record, eval.tf_record,
predictions.json, nbest_predictions.json, and null_odds.json with
--version_2_with_negative), plus `squad_eval.json` with SQuAD's official
metric when the predict file has answers, and with --export_dir a SavedModel
that answers (question, context) strings under TF Serving. Re-running the same command
resumes training from the last checkpoint in --output_dir.
"""

import dataclasses

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
from plumbing.errors import UserError
import run_flags
from tasks import driver
from tasks.squad import task as squad_task
# The original's public names, where its users look for them.
from tasks.squad.examples import read_squad_examples  # noqa: F401
from tasks.squad.examples import SquadExample  # noqa: F401
from tasks.squad.features import convert_examples_to_features  # noqa: F401
from tasks.squad.features import FeatureWriter  # noqa: F401
from tasks.squad.features import InputFeatures  # noqa: F401
from tasks.squad.predictions import get_final_text  # noqa: F401
from tasks.squad.predictions import RawResult  # noqa: F401
from tasks.squad.predictions import write_predictions  # noqa: F401

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged: those shared with the
# other scripts (and the TPU flags) are defined in run_flags.py.
run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("train_file", None,
                    "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None,
                    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
cli.define_max_seq_length(384)
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to "
                     "take between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Questions longer "
                     "than this will be truncated to this length.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated. This is "
                     "needed because the start and end predictions are not conditioned "
                     "on one another.")
flags.DEFINE_bool("verbose_logging", False,
                  "If true, all of the warnings related to data processing will be "
                  "printed. A number of warnings are expected for a normal SQuAD "
                  "evaluation.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "If null_score - best_non_null is greater than the threshold predict "
                   "null.")


# What decides a run's result (plumbing/run_directory/settings.py), besides the shared ones.
SETTINGS = run_flags.TRAINING_SETTINGS + (
    "train_file", "doc_stride", "max_query_length", "version_2_with_negative")


def validate_flags(flag_values):
  """The original's checks of the flags (its case check comes first, in
  run_flags.set_up_fine_tuning)."""
  f = flag_values
  if not f.do_train and not f.do_predict and not f.export_dir:
    raise UserError("At least one of `do_train` or `do_predict` must be True "
                    "(or --export_dir given).")
  if f.do_train and not f.train_file:
    raise UserError("If `do_train` is True, then `train_file` must be specified.")
  if f.do_predict and not f.predict_file:
    raise UserError("If `do_predict` is True, then `predict_file` must be specified.")
  if f.max_seq_length <= f.max_query_length + 3:
    raise UserError("The max_seq_length (%d) must be greater than max_query_length "
                    "(%d) + 3" % (f.max_seq_length, f.max_query_length))


def main(_):
  logging.set_verbosity(logging.INFO)
  recorded = run_flags.check_run_settings(FLAGS, SETTINGS)
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS, validate_flags,
                                                             recorded=recorded)
  settings = squad_task.SquadSettings(**{
      field.name: getattr(FLAGS, field.name)
      for field in dataclasses.fields(squad_task.SquadSettings)})
  task = squad_task.SquadTask(settings, tokenizer, run_flags.export_settings(FLAGS, tokenizer))
  # Fixed length unless --pad_to_max_seq_length=false: the original's span
  # head scores padding positions too (they are in the training loss's softmax
  # and can take places in the n-best lists), so dropping them changes results.
  driver.run(task, run_flags.driver_settings(FLAGS, pad_by_default=True, recorded=recorded),
             strategy, config)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("vocab_file")
  flags.mark_flag_as_required("bert_config_file")
  flags.mark_flag_as_required("output_dir")
  cli.run(main)


if __name__ == "__main__":
  cli_main()
