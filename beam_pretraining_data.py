"""create_pretraining_data.py as an Apache Beam pipeline, for corpora beyond one machine.

  python beam_pretraining_data.py --input_file='corpus/*' \\
    --output_dir=DIR --vocab_file=vocab.txt [create_pretraining_data.py's flags] \\
    [Beam pipeline options, e.g. --runner=DataflowRunner --project=P --region=R]

Every flag of create_pretraining_data.py keeps its meaning; the arguments
this tool does not know are Beam's pipeline options. Without --runner it runs
on this machine with Beam's local engine (the DirectRunner's FnApiRunner; add
--direct_num_workers=N --direct_running_mode=multi_processing for N
processes). What it writes: data_prep/beam_pretraining_data.py.
"""

import logging as py_logging

from absl import flags
from absl import logging

import create_pretraining_data
from data_prep import beam_pretraining_data
from plumbing import cli
from plumbing.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_output_files", 0,
                     "How many output files (0: the runner decides; a number makes "
                     "the runner regroup every record, a shuffle of the data).")


def main(argv):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  if FLAGS.output_file or not FLAGS.output_dir:
    raise UserError("Pass --output_dir (the pipeline writes several files there), "
                    "not --output_file.")
  options = create_pretraining_data.options_from_flags()
  tokenizer, input_files = create_pretraining_data.tokenizer_and_inputs_from_flags()
  # Checked here; each worker loads its own, of the same casing.
  beam_pretraining_data.write_records(
      input_files, FLAGS.output_dir, FLAGS.vocab_file, tokenizer.do_lower_case, options,
      on_invalid_utf8=FLAGS.on_invalid_utf8, num_output_files=FLAGS.num_output_files,
      pipeline_args=argv[1:])


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("vocab_file")
  flags.mark_flag_as_required("output_dir")
  cli.run(main, flags_parser=cli.parse_known_flags)


if __name__ == "__main__":
  cli_main()
