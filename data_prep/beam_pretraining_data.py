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

import glob
import json
import logging as py_logging
import os
import sys
import time

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags
from absl import logging
import apache_beam as beam
from apache_beam import coders
from apache_beam.io import filebasedsink
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from data_prep import beam_options
from data_prep import cli
from data_prep import create_pretraining_data as cpd
from data_prep import pretraining_records
from data_prep import text_io
from data_prep import tfrecord_io
from data_prep import tokenization
from data_prep import warm_up
from data_prep.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_output_files", 0,
                     "How many output files (0: the runner decides; a number makes "
                     "the runner regroup every record, a shuffle of the data).")
OUTPUT_PREFIX = "pretraining_data"
OUTPUT_SUFFIX = ".tfrecord"
_NAMESPACE = "pretraining_data"


class GenerateShard(beam.DoFn):
  """(shard name, input file) -> its records, as the sharded mode makes them,
  in TFRecord-framed batches (framing is compiled; thousands of records per
  element keep Beam's per-element cost out of the way). The tokenizer is
  loaded in `setup`, once per worker, not pickled with the pipeline."""

  def __init__(self, vocab_file, do_lower_case, options, on_invalid_utf8):
    super().__init__()
    self.files = beam.metrics.Metrics.counter(_NAMESPACE, "files")
    self.documents = beam.metrics.Metrics.counter(_NAMESPACE, "documents")
    self.instances = beam.metrics.Metrics.counter(_NAMESPACE, "instances")
    self.busy_ms = beam.metrics.Metrics.counter(_NAMESPACE, "worker_busy_ms")
    self.vocab_file = vocab_file
    self.do_lower_case = do_lower_case
    self.options = options
    self.on_invalid_utf8 = on_invalid_utf8
    self.tokenizer = None

  def setup(self):
    self.tokenizer = tokenization.FullTokenizer(self.vocab_file, self.do_lower_case)
    warm_up.load_compiled_code()  # Once per worker, before its first file.

  def process(self, element):
    started = time.time()
    name, path = element
    instances, order, corpus = cpd.create_instances(
        [path], self.tokenizer, self.options, num_workers=1,
        on_invalid_utf8=self.on_invalid_utf8,
        seed=cpd.derived_seed(self.options.random_seed, name))
    self.files.inc()
    self.documents.inc(corpus.num_documents)
    self.instances.inc(len(order))
    for data, offsets in pretraining_records.iter_serialized_batches(instances, order):
      yield tfrecord_io.framed(data, offsets)
    # Includes writing: the sink consumes each batch before the next is made.
    self.busy_ms.inc(int(1000 * (time.time() - started)))


class FramedRecordSink(filebasedsink.FileBasedSink):
  """Beam's file sink (temporary files, renamed when the pipeline succeeds)
  for elements that are already TFRecord frames."""

  def __init__(self, file_path_prefix, num_shards=0):
    super().__init__(file_path_prefix, coder=coders.BytesCoder(),
                     file_name_suffix=OUTPUT_SUFFIX, num_shards=num_shards,
                     mime_type="application/octet-stream",
                     compression_type=CompressionTypes.UNCOMPRESSED)

  def write_encoded_record(self, file_handle, encoded_value):
    file_handle.write(encoded_value)


def build_pipeline(pipeline, shards, generate, output_dir, num_output_files=0):
  """Adds the steps to `pipeline`: (name, file) shards -> records (by the
  GenerateShard `generate`) -> TFRecord files. With `num_output_files` the
  runner regroups all records into that many files (a shuffle of the data);
  by default each bundle of work writes its own."""
  return (pipeline
          | "InputFiles" >> beam.Create(shards)
          | "OneFilePerWorker" >> beam.Reshuffle()
          | "Generate" >> beam.ParDo(generate)
          | "Write" >> beam.io.Write(FramedRecordSink(
              os.path.join(output_dir, OUTPUT_PREFIX), num_output_files)))


def output_files(output_dir):
  pattern = FileSystems.join(output_dir, "*" + OUTPUT_SUFFIX + "*")
  return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def count_records(path):
  """Records in a TFRecord file, from the length prefixes of their frames
  (8-byte length, 4-byte CRC, data, 4-byte CRC), without reading the data."""
  count = 0
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    while True:
      header = f.read(12)
      if not header:
        return count
      f.seek(int.from_bytes(header[:8], "little") + 4, 1)
      count += 1


def _counts(result):
  counts = {}
  for counter in result.metrics().query()["counters"]:
    if counter.key.metric.namespace == _NAMESPACE:
      counts[counter.key.metric.name] = counter.committed or counter.attempted or 0
  return counts


def _remove_temporary_files(output_dir):
  """The sink's beam-temp-* directory of a failed run (final names are only
  made by a successful one)."""
  if tfrecord_io.is_remote(output_dir):
    # Object stores have no empty directories: find the files inside them.
    pattern = FileSystems.join(output_dir, "beam-temp-*", "*")
    directories = {FileSystems.split(m.path)[0]
                   for m in FileSystems.match([pattern])[0].metadata_list}
  else:  # Beam's local match lists files only; the sink's may be empty.
    directories = glob.glob(os.path.join(output_dir, "beam-temp-*"))
  if directories:
    FileSystems.delete(sorted(directories))


def _beam_error(error):
  """A worker's UserError, as the runner re-raises or wraps it: its message
  alone (None for any other error, which is a bug)."""
  if isinstance(error, UserError):
    return UserError(str(error).split(" [while running")[0])
  for line in str(error).splitlines():
    for marker in ("UserError: ", "InvalidUtf8Error: "):
      if marker in line:
        return UserError(line.split(marker, 1)[1].split(" [while running")[0])
  return None


def _write_summary(path, summary):
  with FileSystems.create(path + ".tmp") as f:
    f.write((json.dumps(summary, indent=2, sort_keys=True) + "\n").encode("utf-8"))
  if FileSystems.exists(path):
    FileSystems.delete([path])
  FileSystems.rename([path + ".tmp"], [path])


def main(argv):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  if FLAGS.output_file or not FLAGS.output_dir:
    raise UserError("Pass --output_dir (the pipeline writes several files there), "
                    "not --output_file.")
  options = cpd.options_from_flags()
  tokenizer, input_files = cpd.tokenizer_and_inputs_from_flags()
  del tokenizer  # Checked here; each worker loads its own.
  shards = sorted(zip(cpd.shard_names(input_files), input_files))
  existing = output_files(FLAGS.output_dir)
  if existing:
    raise UserError("%s already holds %s; choose an empty --output_dir." % (
        FLAGS.output_dir, os.path.basename(existing[0])))
  text_io.makedirs(FLAGS.output_dir)
  pipeline_options = beam_options.local_by_default(argv[1:])
  logging.info("%d input files; pipeline options: %s", len(shards),
               pipeline_options.get_all_options(drop_default=True))
  generate = GenerateShard(FLAGS.vocab_file, FLAGS.do_lower_case, options,
                           FLAGS.on_invalid_utf8)
  # A worker's bad input is reported once, as one line, below; the runner
  # would also log it with a traceback.
  py_logging.getLogger("apache_beam.runners.common").setLevel(py_logging.CRITICAL)
  start = time.time()
  pipeline = beam.Pipeline(options=pipeline_options)
  build_pipeline(pipeline, shards, generate, FLAGS.output_dir, FLAGS.num_output_files)
  try:
    result = pipeline.run()
    result.wait_until_finish()
  except Exception as error:  # pylint: disable=broad-except
    _remove_temporary_files(FLAGS.output_dir)
    user_error = _beam_error(error)
    if user_error is None:
      raise
    raise user_error from None
  paths = output_files(FLAGS.output_dir)
  summary = dict(_counts(result), seconds=round(time.time() - start, 1),
                 records_per_file={os.path.basename(p): count_records(p) for p in paths})
  summary["records"] = sum(summary["records_per_file"].values())
  _write_summary(FileSystems.join(FLAGS.output_dir, "summary.json"), summary)
  logging.info("Done in %.1fs: %s files, %s documents, %d records in %d output files.",
               summary["seconds"], summary.get("files"), summary.get("documents"),
               summary["records"], len(paths))
  for name, count in sorted(summary["records_per_file"].items()):
    logging.info("  %s: %d records", name, count)


if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("vocab_file")
  flags.mark_flag_as_required("output_dir")
  cli.run(main, flags_parser=cli.parse_known_flags)
