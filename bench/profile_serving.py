"""Where a served request's time goes, op type by op type.

  python -m bench.profile_serving [--size=base] [--export_dir=DIR] [--requests=150]
                                  [--traced=30]

Loads a classifier export in a TensorFlow 1 session, as TF Serving loads a
SavedModel (a random-weight single-sentence classifier of --size, as
bench_model.py's, made in a scratch directory unless --export_dir names
one), sends the first --requests SST-2 dev sentences one at a time for the
p50, then traces --traced of them in full and prints each op type's time per
request and count. Run it as TF Serving should run (docs/serving.md:
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1, which this sets unless told otherwise).
Not a contest: the rows of bench_serving_dev.py are.
"""

import argparse
import collections
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench import common

MAX_SEQ_LENGTH = 128


def make_export(size, export_dir):
  """A random-weight single-sentence classifier export of `size`."""
  code = ("from plumbing import startup\n"
          "import modeling\n"
          "from bench import bench_model\n"
          "from serving import classifier\n"
          "config = modeling.BertConfig.from_dict(bench_model.config_dict(%r))\n"
          "classifier.export_classifier(modeling.BertClassifier(config, num_labels=2), %r, %r,"
          " True, %d, ['0', '1'], sentence_pair=False)\n" % (
              size, export_dir, common.VOCAB, MAX_SEQ_LENGTH))
  subprocess.run([sys.executable, "-c", code], check=True, cwd=common.REPO_ROOT,
                 env=common.worker_env(), capture_output=True)


def sentences(glue_dir, count):
  with open(os.path.join(glue_dir, "SST-2", "dev.tsv"), encoding="utf-8") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:count + 1]
  return [row[0] for row in rows]


def op_type(node):
  """The op type of a traced node ("name = Type(inputs)" in its label)."""
  label = node.timeline_label
  return label.split(" = ", 1)[1].split("(", 1)[0].strip() if " = " in label else node.node_name


def profile(export_dir, texts, traced):
  """(p50 ms, {op type: (ms per request, ops per request)}) of serving_default."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  tf.compat.v1.disable_eager_execution()
  with tf.compat.v1.Session(graph=tf.Graph()) as session:
    meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    signature = meta.signature_def["serving_default"]
    (text_input,) = [t.name for t in signature.inputs.values()]
    outputs = [t.name for t in signature.outputs.values()]
    for text in texts[:10]:
      session.run(outputs, {text_input: [text]})
    seconds = []
    for text in texts:
      start = time.perf_counter()
      session.run(outputs, {text_input: [text]})
      seconds.append(time.perf_counter() - start)
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    micros, counts = collections.Counter(), collections.Counter()
    for text in texts[:traced]:
      metadata = tf.compat.v1.RunMetadata()
      session.run(outputs, {text_input: [text]}, options=options, run_metadata=metadata)
      for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
          micros[op_type(node)] += node.all_end_rel_micros
          counts[op_type(node)] += 1
  seconds.sort()
  return 1000 * seconds[len(seconds) // 2], {
      op: (micros[op] / traced / 1000, counts[op] / traced) for op in micros}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--export_dir")
  parser.add_argument("--requests", type=int, default=150)
  parser.add_argument("--traced", type=int, default=30)
  parser.add_argument("--top", type=int, default=25)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  args = parser.parse_args()
  os.environ.setdefault("TF_ONEDNN_ASSUME_FROZEN_WEIGHTS", "1")
  scratch = None
  export_dir = args.export_dir
  if not export_dir:
    scratch = tempfile.mkdtemp(prefix="profile_serving_")
    export_dir = os.path.join(scratch, "export")
    make_export(args.size, export_dir)
  try:
    p50, ops = profile(export_dir, sentences(args.glue_dir, args.requests),
                       min(args.traced, args.requests))
  finally:
    if scratch:
      shutil.rmtree(scratch, ignore_errors=True)
  total = sum(ms for ms, _ in ops.values())
  machine = common.machine()
  print("%s (%s), %d cores; p50 %.2f ms over %d requests; traced op time %.2f ms a "
        "request" % (machine["cpu"], ", ".join(machine["cpu_flags"]), machine["cores"], p50,
                     args.requests, total))
  print("| op type | ms a request | share | ops a request |\n|---|---:|---:|---:|")
  for op, (ms, count) in sorted(ops.items(), key=lambda item: -item[1][0])[:args.top]:
    print("| %s | %.3f | %.1f%% | %.0f |" % (op, ms, 100 * ms / total, count))


if __name__ == "__main__":
  main()
