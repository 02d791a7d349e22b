"""create_pretraining_data as an Apache Beam pipeline, for corpora beyond one machine.

  python -m data_prep.beam_pretraining_data --input_file='corpus/*' \\
    --output_dir=DIR --vocab_file=vocab.txt [create_pretraining_data's flags] \\
    [Beam pipeline options, e.g. --runner=DataflowRunner --project=P --region=R]

Every flag of create_pretraining_data keeps its meaning; the arguments this
tool does not know are Beam's pipeline options. Without --runner it runs on
this machine with Beam's local engine (the DirectRunner's FnApiRunner; add
--direct_num_workers=N --direct_running_mode=multi_processing for N
processes). Each input file is one unit of work, made exactly as the sharded
mode (`create_pretraining_data --output_dir`) makes it, with the same derived
seed: the set of records is the same; only their order and split into files
(DIR/pretraining_data-SSSSS-of-NNNNN.tfrecord) are the runner's. A worker
holds one input file's instances at a time. Beam's file sink writes
temporary files and renames them when the pipeline succeeds, so a failed run
leaves no output files. DIR/summary.json gets the counts at the end.
"""

import logging as py_logging
import os
import sys
import time

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags
from absl import logging
import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from data_prep import create_pretraining_data as cpd
from data_prep.pretraining import beam_pipeline
from data_prep.pretraining import generator
from plumbing import beam_options
from plumbing import cli
from plumbing.errors import UserError
from plumbing import files
from plumbing import stop_request
from plumbing.errors import Stopped

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
  options = cpd.options_from_flags()
  tokenizer, input_files = cpd.tokenizer_and_inputs_from_flags()
  del tokenizer  # Checked here; each worker loads its own.
  shards = sorted(zip(generator.shard_names(input_files), input_files))
  existing = beam_pipeline.output_files(FLAGS.output_dir)
  if existing:
    raise UserError("%s already holds %s; choose an empty --output_dir." % (
        FLAGS.output_dir, os.path.basename(existing[0])))
  files.makedirs(FLAGS.output_dir)
  beam_pipeline.remove_temporary_files(FLAGS.output_dir)  # Of a run that was killed.
  pipeline_options = beam_options.local_by_default(argv[1:])
  logging.info("%d input files; pipeline options: %s", len(shards),
               pipeline_options.get_all_options(drop_default=True))
  generate = beam_pipeline.GenerateShard(FLAGS.vocab_file, FLAGS.do_lower_case, options,
                                         FLAGS.on_invalid_utf8)
  # A worker's bad input is reported once, as one line, below; the runner
  # would also log it with a traceback.
  py_logging.getLogger("apache_beam.runners.common").setLevel(py_logging.CRITICAL)
  start = time.time()
  pipeline = beam.Pipeline(options=pipeline_options)
  beam_pipeline.build_pipeline(pipeline, shards, generate, FLAGS.output_dir,
                               FLAGS.num_output_files)
  # SIGTERM: in-process workers stop at their next safe point; others end
  # with this process after a grace period (the next run cleans up after them).
  with stop_request.safe_points():
    try:
      result = pipeline.run()
      result.wait_until_finish()
    except Exception as error:  # pylint: disable=broad-except
      beam_pipeline.remove_temporary_files(FLAGS.output_dir)
      if stop_request.requested():
        raise Stopped("SIGTERM during the pipeline; no output file was written (its "
                      "temporary files are removed). Run the same command again.") from None
      user_error = beam_pipeline.user_error_of(error)
      if user_error is None:
        raise
      raise user_error from None
  paths = beam_pipeline.output_files(FLAGS.output_dir)
  summary = dict(beam_pipeline.metric_counts(result),
                 seconds=round(time.time() - start, 1),
                 records_per_file={os.path.basename(p): beam_pipeline.count_records(p)
                                   for p in paths})
  summary["records"] = sum(summary["records_per_file"].values())
  beam_pipeline.write_summary(FileSystems.join(FLAGS.output_dir, "summary.json"), summary)
  logging.info("Done in %.1fs: %s files, %s documents, %d records in %d output files.",
               summary["seconds"], summary.get("files"), summary.get("documents"),
               summary["records"], len(paths))
  for name, count in sorted(summary["records_per_file"].items()):
    logging.info("  %s: %d records", name, count)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("vocab_file")
  flags.mark_flag_as_required("output_dir")
  cli.run(main, flags_parser=cli.parse_known_flags)


if __name__ == "__main__":
  cli_main()
