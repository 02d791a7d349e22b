"""Where a served request's time goes, op type by op type.

  python -m bench.profile_serving [--size=base] [--export_dir=DIR] [--requests=150] [--ort]
                                  [--traced=30]

Loads a classifier export in a TensorFlow 1 session, as TF Serving loads a
SavedModel (a random-weight single-sentence classifier of --size, as
bench_model.py's, made in a scratch directory unless --export_dir names
one), sends the first --requests SST-2 dev sentences one at a time for the
p50, then traces --traced of them in full and prints each op type's time per
request and count. Run it as TF Serving should run (docs/serving.md:
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1, which this sets unless told otherwise).
With --ort (and the ort environment: python -m bench.environments
--peers=ort), the same weights also go through ONNX Runtime as
bench_serving_dev.py builds it, profiled by ORT's own profiler on the same
requests: its time per op type too, and each side's time in matrix products
(ours: the oneDNN products and attention's batched ones; ORT's: MatMul,
Gemm and its fused Attention, which holds the query/key/value product).
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


def is_product(op):
  """Whether an op type multiplies matrices: TensorFlow's (oneDNN) MatMul
  kinds, ORT's MatMul, Gemm and fused Attention."""
  return "MatMul" in op or "Gemm" in op or op == "Attention"


def make_export(size, export_dir, hf_dir=None):
  """A random-weight single-sentence classifier export of `size` (and its
  weights as a Hugging Face directory in `hf_dir`)."""
  code = ("from plumbing import startup\n"
          "import argparse\n"
          "import modeling\n"
          "from bench import bench_model, bench_serving_dev\n"
          "from serving import classifier\n"
          "config = modeling.BertConfig.from_dict(bench_model.config_dict(%r))\n"
          "model = modeling.BertClassifier(config, num_labels=2)\n"
          "classifier.export_classifier(model, %r, %r, True, %d, ['0', '1'],"
          " sentence_pair=False)\n"
          "if %r:\n"
          "  bench_serving_dev.write_hf_directory(argparse.Namespace(vocab_file=%r), model,"
          " config, %r)\n" % (size, export_dir, common.VOCAB, MAX_SEQ_LENGTH, hf_dir,
                              common.VOCAB, hf_dir))
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


def profile_ort(onnx_file, texts, traced):
  """(p50 ms, {op type: (ms per request, ops per request)}) of ORT's session
  on the same requests, from its profiler. Runs in the ort environment."""
  import json  # pylint: disable=g-import-not-at-top
  import onnxruntime  # pylint: disable=g-import-not-at-top
  from bench import bench_serving_dev  # pylint: disable=g-import-not-at-top
  tokenizer = bench_serving_dev.fast_tokenizer(common.VOCAB)

  def session_of(profiling):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    options.enable_profiling = profiling
    options.profile_file_prefix = os.path.join(os.path.dirname(onnx_file), "ort_profile")
    return onnxruntime.InferenceSession(onnx_file, options, providers=["CPUExecutionProvider"])

  def feed(text):
    inputs = bench_serving_dev.encode(tokenizer, [text], [""], "np")
    return {name: inputs[name] for name in bench_serving_dev.ONNX_INPUTS}
  session = session_of(False)
  for text in texts[:10]:
    session.run(None, feed(text))
  seconds = []
  for text in texts:
    start = time.perf_counter()
    session.run(None, feed(text))
    seconds.append(time.perf_counter() - start)
  session = session_of(True)
  for text in texts[:10]:
    session.run(None, feed(text))
  micros, counts = collections.Counter(), collections.Counter()
  for text in texts[:traced]:
    session.run(None, feed(text))
  profile_file = session.end_profiling()
  with open(profile_file, encoding="utf-8") as f:
    events = json.load(f)
  os.remove(profile_file)
  # Each run is a "model_run" span; the traced ones are the last `traced`.
  runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "model_run")
  start = runs[-traced][0]
  for event in events:
    if (event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and
        event["ts"] >= start):
      micros[event["args"]["op_name"]] += event["dur"]
      counts[event["args"]["op_name"]] += 1
  seconds.sort()
  common.report_result({"p50": 1000 * seconds[len(seconds) // 2], "ops": {
      op: (micros[op] / traced / 1000, counts[op] / traced) for op in micros}})


def table(title, p50, ops, top):
  total = sum(ms for ms, _ in ops.values())
  products = sum(ms for op, (ms, _) in ops.items() if is_product(op))
  print("\n%s: p50 %.2f ms; traced op time %.2f ms a request, of which matrix products "
        "%.2f ms" % (title, p50, total, products))
  print("| op type | ms a request | share | ops a request |\n|---|---:|---:|---:|")
  for op, (ms, count) in sorted(ops.items(), key=lambda item: -item[1][0])[:top]:
    print("| %s | %.3f | %.1f%% | %.0f |" % (op, ms, 100 * ms / total, count))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--export_dir")
  parser.add_argument("--requests", type=int, default=150)
  parser.add_argument("--traced", type=int, default=30)
  parser.add_argument("--top", type=int, default=25)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--ort", action="store_true",
                      help="Profile ONNX Runtime on the same weights too.")
  parser.add_argument("--ort_worker", help=argparse.SUPPRESS)  # Its optimized ONNX file.
  args = parser.parse_args()
  texts = sentences(args.glue_dir, args.requests)
  traced = min(args.traced, args.requests)
  if args.ort_worker:
    return profile_ort(args.ort_worker, texts, traced)
  os.environ.setdefault("TF_ONEDNN_ASSUME_FROZEN_WEIGHTS", "1")
  scratch = tempfile.mkdtemp(prefix="profile_serving_")
  try:
    # With --ort, both sides run the weights made here.
    export_dir = args.export_dir if args.export_dir and not args.ort else os.path.join(
        scratch, "export")
    hf_dir = os.path.join(scratch, "hf") if args.ort else None
    if export_dir != args.export_dir:
      make_export(args.size, export_dir, hf_dir)
    p50, ops = profile(export_dir, texts, traced)
    ort = ort_profile(args, scratch, hf_dir) if hf_dir else None
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  machine = common.machine()
  print("%s (%s), %d cores; %d SST-2 dev requests one at a time, %d traced" % (
      machine["cpu"], ", ".join(machine["cpu_flags"]), machine["cores"], args.requests,
      traced))
  table("ours (TensorFlow 1 session, as TF Serving)", p50, ops, args.top)
  if ort:
    table("ONNX Runtime (its profiler)", ort["p50"], ort["ops"], args.top)


def ort_profile(args, scratch, hf_dir):
  """ORT's figures on the weights in `hf_dir`: built as bench_serving_dev
  builds its graph, profiled in the ort environment; None without it."""
  from bench import environments  # pylint: disable=g-import-not-at-top
  if not environments.installed("ort"):
    print("ort: skipped (no ort environment: python -m bench.environments --peers=ort)")
    return None
  onnx_file = os.path.join(scratch, "ort", "model.onnx")
  os.makedirs(os.path.dirname(onnx_file))
  python = environments.python_of("ort")
  if not common.run_worker([python, "-m", "bench.bench_serving_dev", "--export_onnx=" + onnx_file,
                            "--model=" + hf_dir, "--vocab_file=" + common.VOCAB],
                           "ort's ONNX export"):
    return None
  return common.run_worker([python, "-m", "bench.profile_serving", "--ort_worker=" + onnx_file,
                            "--requests=%d" % args.requests, "--traced=%d" % args.traced,
                            "--glue_dir=" + args.glue_dir], "ort's profile")


if __name__ == "__main__":
  main()
