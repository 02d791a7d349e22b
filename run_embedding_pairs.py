"""Fine-tunes a model's sentence vectors on pairs of texts that mean the
same (sentence-transformers' MultipleNegativesRankingLoss: in-batch
negatives), from your own CSV, TSV or JSON Lines files.

  python run_embedding_pairs.py --do_train --do_eval --train_file=pairs.csv \\
    --dev_file=sts_dev.csv --vocab_file=$MODEL/vocab.txt \\
    --bert_config_file=$MODEL/bert_config.json \\
    --init_checkpoint=$MODEL/bert_model.ckpt --sentence_transformers_dir=$HF_DIR \\
    --output_dir=/tmp/pairs/ [--export_dir=/tmp/pairs_export/1]

--train_file: an anchor, its positive and optionally a hard negative per
row (columns anchor,positive[,negative] or sentence1,sentence2, or
--train_columns); --dev_file: two texts and a score per row, scored by the
Spearman and Pearson correlation of the texts' cosine similarity into
eval_results.txt. The pooling, normalisation and length come from the
model's sentence-transformers files as embed.py's do; the run records them
in --output_dir in those files' format, so that embed.py
(--sentence_transformers_dir=<output_dir>) and convert_checkpoint.py
(--output_format=huggingface) follow them. Written: train/eval.tf_record,
checkpoints, eval_results.txt; --export_dir a SavedModel that takes raw
text and returns the vector (serving/embedding.py).
"""

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
from plumbing.errors import UserError
import run_flags
from tasks import driver
from tasks import table_files
from tasks.sentence_embedding import pairs

FLAGS = flags.FLAGS

run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
run_flags.define_eval_flags()
run_flags.define_sentence_vector_flags()
flags.DEFINE_string("train_file", None,
                    "Your training pairs or triplets: .csv, .tsv or .jsonl (JSON Lines).")
flags.DEFINE_list("train_columns", None,
                  "--train_file's anchor, positive and (optional) negative columns: header "
                  "names, or 0-based indexes for files without a header. Default: "
                  "anchor,positive[,negative], else sentence1,sentence2.")
flags.DEFINE_string("dev_file", None,
                    "Your scored pairs, which --do_eval scores: .csv, .tsv or .jsonl.")
flags.DEFINE_list("dev_columns", None,
                  "--dev_file's two text columns and its score column. Default: "
                  "sentence1,sentence2,score (or label).")
flags.DEFINE_float("scale", 20.0,
                   "The loss's scale of the cosine similarities (sentence-transformers' "
                   "default; 1 / temperature).", lower_bound=0.0)
run_flags.define_best_weights_flags("the Spearman correlation")
# sentence-transformers' trainer draws a new order of the whole file each
# epoch; a buffer of 100 over a repeated file can put one row twice in a
# batch, where it is its own negative.
FLAGS.set_default("train_shuffle_buffer", 0)

# What decides a run's result (plumbing/run_directory/settings.py), besides the
# shared ones; pooling, normalize and max_seq_length as decided.
SETTINGS = run_flags.TRAINING_SETTINGS + (
    "train_file", "train_columns", "scale", "eval_every_steps", "early_stopping_patience")


def _check_flags(flag_values):
  """The actions, and what in-batch negatives need: the whole batch at once."""
  f = flag_values
  if not (f.do_train or f.do_eval or f.export_dir):
    raise UserError("Nothing to do: give --do_train, --do_eval or --export_dir.")
  if f.gradient_accumulation_steps != 1:
    raise UserError("--gradient_accumulation_steps=%d: in-batch negatives need the whole "
                    "batch at once (every anchor is scored against every positive); use a "
                    "smaller --train_batch_size instead." % f.gradient_accumulation_steps)
  if f.scale <= 0:
    raise UserError("--scale=%s: the scale must be above 0." % f.scale)


def _examples():
  """The training and dev rows the flags name (None where not given): every
  file read, and checked, before any work."""
  train = dev = None
  for action, flag in (("do_train", "train_file"), ("do_eval", "dev_file")):
    if FLAGS[action].value and not FLAGS[flag].value:
      raise UserError("--%s needs --%s." % (action, flag))
  if FLAGS.train_file:
    train = pairs.read_training_file(
        FLAGS.train_file, FLAGS.train_columns and table_files.columns_of_flag(
            FLAGS.train_columns, "--train_columns"))
  if FLAGS.dev_file:
    dev = pairs.read_scored_file(
        FLAGS.dev_file, FLAGS.dev_columns and table_files.columns_of_flag(
            FLAGS.dev_columns, "--dev_columns"))
  return train, dev


def main(_):
  logging.set_verbosity(logging.INFO)
  settings = run_flags.sentence_vector_settings(FLAGS)
  recorded = run_flags.check_run_settings(FLAGS, SETTINGS, decided={
      "pooling": settings.pooling, "normalize": settings.normalize,
      "max_seq_length": settings.max_seq_length})
  train, dev = _examples()
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(
      FLAGS, check_flags=_check_flags, max_seq_length=settings.max_seq_length,
      recorded=recorded)
  if FLAGS.do_train:  # What the weights it trains mean; other commands leave it as it is.
    pairs.record_settings(FLAGS.output_dir, config.hidden_size, settings)
  task = pairs.PairsTask(train, dev, tokenizer, settings,
                         run_flags.export_settings(FLAGS, tokenizer), scale=FLAGS.scale)
  driver.run(task, run_flags.driver_settings(FLAGS, recorded=recorded), strategy, config)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
