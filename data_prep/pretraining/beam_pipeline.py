"""The pre-training data generator as Apache Beam steps (the pipeline is
data_prep/beam_pretraining_data.py).

Each input file is one unit of work (`GenerateShard`), made exactly as the
sharded mode makes it, with the same derived seed. Workers emit
TFRecord-framed batches (compiled framing; thousands of records per element
keep Beam's per-element cost out of the way) into Beam's file sink
(`FramedRecordSink`), which writes temporary files and renames them only when
the pipeline succeeds. Nothing here imports TensorFlow: Beam's FileSystems
reach local and remote files.
"""

import glob
import json
import os
import time

import apache_beam as beam
from apache_beam import coders
from apache_beam.io import filebasedsink
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from data_prep.pretraining import generator
from data_prep.pretraining import records
from data_prep.pretraining import warm_up
from data_prep import tokenization
from plumbing.errors import UserError
from plumbing import files
from plumbing import tfrecord

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
    instances, order, corpus = generator.create_instances(
        [path], self.tokenizer, self.options, num_workers=1,
        on_invalid_utf8=self.on_invalid_utf8,
        seed=generator.derived_seed(self.options.random_seed, name))
    self.files.inc()
    self.documents.inc(corpus.num_documents)
    self.instances.inc(len(order))
    for data, offsets in records.iter_serialized_batches(instances, order):
      yield tfrecord.framed(data, offsets)
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
  """Records in one output file (Beam's FileSystems: local or remote)."""
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    return tfrecord.count_records(f)


def metric_counts(result):
  """The pipeline's counters of GenerateShard (files, documents, ...)."""
  counts = {}
  for counter in result.metrics().query()["counters"]:
    if counter.key.metric.namespace == _NAMESPACE:
      counts[counter.key.metric.name] = counter.committed or counter.attempted or 0
  return counts


def remove_temporary_files(output_dir):
  """The sink's beam-temp-* directory of a failed run (final names are only
  made by a successful one)."""
  if files.is_remote(output_dir):
    # Object stores have no empty directories: find the files inside them.
    pattern = FileSystems.join(output_dir, "beam-temp-*", "*")
    directories = {FileSystems.split(m.path)[0]
                   for m in FileSystems.match([pattern])[0].metadata_list}
  else:  # Beam's local match lists files only; the sink's may be empty.
    directories = glob.glob(os.path.join(output_dir, "beam-temp-*"))
  if directories:
    FileSystems.delete(sorted(directories))


def user_error_of(error):
  """A worker's UserError, as the runner re-raises or wraps it: its message
  alone (None for any other error, which is a bug)."""
  if isinstance(error, UserError):
    return UserError(str(error).split(" [while running")[0])
  for line in str(error).splitlines():
    for marker in ("UserError: ", "InvalidUtf8Error: "):
      if marker in line:
        return UserError(line.split(marker, 1)[1].split(" [while running")[0])
  return None


def write_summary(path, summary):
  """summary.json, through Beam's FileSystems so that the driver needs no
  TensorFlow for gs:// or hdfs:// (plumbing.files would import it)."""
  with FileSystems.create(path + ".tmp") as f:
    f.write((json.dumps(summary, indent=2, sort_keys=True) + "\n").encode("utf-8"))
  if FileSystems.exists(path):
    FileSystems.delete([path])
  FileSystems.rename([path + ".tmp"], [path])
