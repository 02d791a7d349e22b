"""Raw text -> masked-LM / next-sentence TFRecords, identical to the original's.

  python create_pretraining_data.py \\
    --input_file=corpus.txt --output_file=out.tfrecord \\
    --vocab_file=vocab.txt --do_lower_case=True

Every flag of the original keeps its name and default. Additions:
  --num_workers           threads for tokenization (0 = one per core);
  --on_invalid_utf8       `strict` (error naming file and line) or `ignore`;
  --output_dir, --num_tasks, --task_index
                          sharded mode (docs/pretraining_data.md): each input file is an
                          independent shard with its own derived seed, written
                          to output_dir/<input name>.tfrecord; existing shards
                          are skipped, so an interrupted run resumes.
"""

import logging as py_logging
import os

from absl import app
from absl import flags
from absl import logging

from data_prep import casing
from data_prep import create_pretraining_data as pretraining_data
from data_prep.pretraining import generator
# The original's library names, where its users look for them.
from data_prep.pretraining.generator import create_training_instances  # noqa: F401
from data_prep.pretraining.generator import TrainingInstance  # noqa: F401
from data_prep.pretraining.generator import write_instance_to_example_files  # noqa: F401
from plumbing import cli

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files).")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files).")
cli.define_tokenizer_flags()
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Whether to use whole word masking rather than per-WordPiece "
                  "masking.")
cli.define_max_seq_length(help_text="Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10,
                     "Number of times to duplicate the input data (with "
                     "different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences which are shorter than "
                   "the maximum length.")
# Additions.
flags.DEFINE_integer("num_workers", 0,
                     "Tokenization threads; 0 means one per CPU core.")
flags.DEFINE_enum("on_invalid_utf8", "strict", ["strict", "ignore"],
                  "What to do with input lines that are not valid UTF-8: stop "
                  "with an error naming the file and line, or drop the bad "
                  "bytes.")
flags.DEFINE_string("output_dir", None,
                    "Sharded mode: write one output per input file into this "
                    "directory instead of --output_file.")
flags.DEFINE_integer("num_tasks", 1,
                     "Sharded mode: how many processes/machines share the "
                     "input files.")
flags.DEFINE_integer("task_index", 0,
                     "Sharded mode: which of --num_tasks this process is; it "
                     "handles input files i with i % num_tasks == task_index.")


def options_from_flags():
  """The flags' generation settings, checked."""
  options = generator.Options(
      max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      random_seed=FLAGS.random_seed, dupe_factor=FLAGS.dupe_factor,
      masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
      do_whole_word_mask=FLAGS.do_whole_word_mask)
  options.validate()
  return options


def tokenizer_and_inputs_from_flags():
  """The flags' tokenizer and input files, checked before any work starts.
  The tokenizer's casing is --do_lower_case when given, else the one recorded
  beside the vocabulary (data_prep/casing.py)."""
  flag = FLAGS["do_lower_case"]
  do_lower_case = casing.resolve(flag.value, not flag.using_default_value,
                                 [os.path.dirname(FLAGS.vocab_file) or "."])
  return pretraining_data.checked_inputs(FLAGS.vocab_file, do_lower_case, FLAGS.input_file)


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  options = options_from_flags()
  if bool(FLAGS.output_file) == bool(FLAGS.output_dir):
    raise app.UsageError("Pass exactly one of --output_file and --output_dir.")
  tokenizer, input_files = tokenizer_and_inputs_from_flags()
  pretraining_data.write_records(
      tokenizer, input_files, options,
      output_files=FLAGS.output_file.split(",") if FLAGS.output_file else None,
      output_dir=FLAGS.output_dir, num_tasks=FLAGS.num_tasks, task_index=FLAGS.task_index,
      num_workers=FLAGS.num_workers, on_invalid_utf8=FLAGS.on_invalid_utf8)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("vocab_file")
  cli.run(main)


if __name__ == "__main__":
  cli_main()
