"""create_pretraining_data as an Apache Beam pipeline, for corpora beyond one
machine: what the beam_pretraining_data.py command runs, with plain arguments.

Each input file is one unit of work, made exactly as the sharded mode
(`create_pretraining_data.py --output_dir`) makes it, with the same derived
seed: the set of records is the same; only their order and split into files
(DIR/pretraining_data-SSSSS-of-NNNNN.tfrecord) are the runner's. A worker
holds one input file's instances at a time. Beam's file sink writes
temporary files and renames them when the pipeline succeeds, so a failed run
leaves no output files. DIR/summary.json gets the counts at the end.
"""

import logging as py_logging
import os
import time

from absl import logging
import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from data_prep.pretraining import beam_pipeline
from data_prep.pretraining import generator
from plumbing import beam_options
from plumbing.errors import UserError
from plumbing import files
from plumbing import stop_request
from plumbing.errors import Stopped


def write_records(input_files, output_dir, vocab_file, do_lower_case, options,
                  on_invalid_utf8="strict", num_output_files=0, pipeline_args=()):
  """Writes the records of `input_files` (generator.Options `options`) into
  `output_dir`, which must hold none yet, then its summary.json.
  `num_output_files` 0: the runner decides. `pipeline_args`: Beam's pipeline
  options (none: this machine, Beam's local engine)."""
  shards = sorted(zip(generator.shard_names(input_files), input_files))
  existing = beam_pipeline.output_files(output_dir)
  if existing:
    raise UserError("%s already holds %s; choose an empty --output_dir." % (
        output_dir, os.path.basename(existing[0])))
  files.makedirs(output_dir)
  beam_pipeline.remove_temporary_files(output_dir)  # Of a run that was killed.
  pipeline_options = beam_options.local_by_default(list(pipeline_args))
  logging.info("%d input files; pipeline options: %s", len(shards),
               pipeline_options.get_all_options(drop_default=True))
  generate = beam_pipeline.GenerateShard(vocab_file, do_lower_case, options, on_invalid_utf8)
  # A worker's bad input is reported once, as one line, below; the runner
  # would also log it with a traceback.
  py_logging.getLogger("apache_beam.runners.common").setLevel(py_logging.CRITICAL)
  start = time.time()
  pipeline = beam.Pipeline(options=pipeline_options)
  beam_pipeline.build_pipeline(pipeline, shards, generate, output_dir, num_output_files)
  result = _run(pipeline, output_dir)
  _summarize(result, output_dir, start)


def _run(pipeline, output_dir):
  """Runs `pipeline` to the end; a failure or SIGTERM leaves no output file."""
  # SIGTERM: in-process workers stop at their next safe point; others end
  # with this process after a grace period (the next run cleans up after them).
  with stop_request.safe_points():
    try:
      result = pipeline.run()
      result.wait_until_finish()
      return result
    except Exception as error:  # pylint: disable=broad-except
      beam_pipeline.remove_temporary_files(output_dir)
      if stop_request.requested():
        raise Stopped("SIGTERM during the pipeline; no output file was written (its "
                      "temporary files are removed). Run the same command again.") from None
      user_error = beam_pipeline.user_error_of(error)
      if user_error is None:
        raise
      raise user_error from None


def _summarize(result, output_dir, start):
  """Writes output_dir/summary.json (the pipeline's counts, its seconds since
  `start`, records per output file) and logs it."""
  paths = beam_pipeline.output_files(output_dir)
  summary = dict(beam_pipeline.metric_counts(result), seconds=round(time.time() - start, 1),
                 records_per_file={os.path.basename(p): beam_pipeline.count_records(p)
                                   for p in paths})
  summary["records"] = sum(summary["records_per_file"].values())
  beam_pipeline.write_summary(FileSystems.join(output_dir, "summary.json"), summary)
  logging.info("Done in %.1fs: %s files, %s documents, %d records in %d output files.",
               summary["seconds"], summary.get("files"), summary.get("documents"),
               summary["records"], len(paths))
  for name, count in sorted(summary["records_per_file"].items()):
    logging.info("  %s: %d records", name, count)
