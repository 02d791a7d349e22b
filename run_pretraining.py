"""Masked-LM + next-sentence pre-training of BERT, with the original's flags.

  python run_pretraining.py --input_file=train.tfrecord --output_dir=out \\
    --do_train --do_eval --bert_config_file=bert_config.json \\
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \\
    --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

--pretraining_objective=mlm (no next-sentence prediction) or ltr (a
left-to-right language model) trains the paper's ablations from the same
records (modeling/pretraining.py). Runs on one device, several GPUs, several
machines or a TPU (--distribution_strategy); re-running the same command
resumes from the last checkpoint in --output_dir.
"""

from absl import flags
from absl import logging
from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
import tensorflow as tf

from data_prep import tokenization
from data_prep.pretraining import dataset as pretraining_dataset
from data_prep.pretraining import dynamic_masking
import modeling
from modeling import losses
from modeling import pretraining
from modeling.checkpoints import loading
from modeling import training
from plumbing import cli
from plumbing.errors import UserError
from plumbing import files
from plumbing import text_io
import run_flags
from tasks import driver

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged: those shared with the
# other scripts (and the TPU flags) are defined in run_flags.py.
run_flags.define_training_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("input_file", None,
                    "Input TF example files (can be a glob or comma separated).")
cli.define_max_seq_length(help_text=(
    "The maximum total input sequence length after WordPiece tokenization. "
    "Must match the data generation."))
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence. "
                     "Must match data generation.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")

# Additions besides the shared ones.
flags.DEFINE_enum("pretraining_objective", "mlm_nsp", list(pretraining.OBJECTIVES),
                  "mlm_nsp: masked LM + next-sentence prediction (the original); mlm: "
                  "masked LM only; ltr: left-to-right LM (needs \"causal_attention\": "
                  "true in the config). The paper's ablations; see modeling/pretraining.py.")
flags.DEFINE_bool("dynamic_masking", False,
                  "Mask each training record afresh every time it is read (RoBERTa's "
                  "dynamic masking), with create_pretraining_data's rules and the "
                  "flags below; the records' own masks are undone first. Off: the "
                  "records' static masks, as the original.")
flags.DEFINE_string("vocab_file", None,
                    "With --dynamic_masking: the vocabulary the records were made with.")
flags.DEFINE_float("masked_lm_prob", 0.15, "With --dynamic_masking: the share of tokens "
                   "to mask (at most --max_predictions_per_seq).")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "With --dynamic_masking: mask whole words (all their WordPieces).")
flags.DEFINE_bool("eval_one_pass", False,
                  "Evaluate every record once instead of --max_eval_steps batches "
                  "of a repeated input.")

# What decides a run's result (plumbing/run_directory/settings.py), besides the shared
# ones; the vocabulary and masking flags count only with --dynamic_masking.
_SETTINGS = ("input_file", "max_predictions_per_seq", "pretraining_objective",
             "dynamic_masking")
_MASKING_SETTINGS = ("vocab_file", "masked_lm_prob", "do_whole_word_mask")


def main(_):
  logging.set_verbosity(logging.INFO)
  if not FLAGS.do_train and not FLAGS.do_eval:
    raise UserError("At least one of `do_train` or `do_eval` must be True.")
  shared = [n for n in run_flags.TRAINING_SETTINGS if n not in _MASKING_SETTINGS]
  masking = list(_MASKING_SETTINGS) if FLAGS.dynamic_masking else []
  recorded = run_flags.check_run_settings(FLAGS, shared + list(_SETTINGS) + masking)
  strategy = run_flags.create_strategy(FLAGS)  # First: before TensorFlow runs anything.
  config = run_flags.load_config(FLAGS)
  input_files = text_io.expand_globs(FLAGS.input_file)
  pretraining_dataset.check_record_shapes(input_files, FLAGS.max_seq_length,
                                          FLAGS.max_predictions_per_seq)
  files.makedirs(FLAGS.output_dir)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = pretraining.create_pretrainer(config, FLAGS.pretraining_objective)

  step = 0
  if FLAGS.do_train:
    masking = _dynamic_masking() if FLAGS.dynamic_masking else None

    def dataset_fn(per_replica_batch, input_context):
      return pretraining_dataset.pretraining_dataset(
          input_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
          per_replica_batch, is_training=True, seed=FLAGS.seed,
          input_context=input_context, objective=FLAGS.pretraining_objective,
          trim_to_multiple=run_flags.trim_to_multiple(FLAGS), masking=masking)
    settings = run_flags.training_settings(FLAGS, num_train_steps=FLAGS.num_train_steps,
                                           num_warmup_steps=FLAGS.num_warmup_steps,
                                           recorded=recorded)
    step = training.train(strategy, model, losses.ModelLoss(model), dataset_fn,
                          settings, deferred=deferred).step
  elif FLAGS.do_eval:
    latest = tf.train.latest_checkpoint(FLAGS.output_dir)
    if not latest and not FLAGS.init_checkpoint and not FLAGS.weights:
      raise UserError("--do_eval needs a checkpoint in --output_dir or --init_checkpoint.")
    step = loading.load_for_inference(model, FLAGS.output_dir, FLAGS.init_checkpoint,
                                       deferred, FLAGS.weights)

  if FLAGS.do_eval:
    dataset = pretraining_dataset.pretraining_dataset(
        input_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
        FLAGS.eval_batch_size, is_training=False, repeat=not FLAGS.eval_one_pass,
        objective=FLAGS.pretraining_objective,
        trim_to_multiple=run_flags.trim_to_multiple(FLAGS))
    results = pretraining.evaluate(
        strategy, model, dataset,
        max_steps=None if FLAGS.eval_one_pass else FLAGS.max_eval_steps)
    driver.write_eval_results(FLAGS.output_dir, results, step)


def _dynamic_masking():
  if FLAGS.pretraining_objective == "ltr":
    raise UserError("--dynamic_masking is for the masked-LM objectives; "
                    "--pretraining_objective=ltr predicts every next token instead.")
  if not FLAGS.vocab_file:
    raise UserError("--dynamic_masking needs --vocab_file: the vocabulary of the records.")
  return dynamic_masking.DynamicMasking(
      tokenization.load_vocab(FLAGS.vocab_file), FLAGS.masked_lm_prob,
      FLAGS.max_predictions_per_seq, FLAGS.do_whole_word_mask, FLAGS.seed)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("bert_config_file")
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("output_dir")
  cli.run(main)


if __name__ == "__main__":
  cli_main()
