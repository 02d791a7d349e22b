"""Where a served request's time goes that our graph cannot change: BERT-Base's
matrix products at a request's size, TensorFlow against PyTorch.

  python bench/bench_serving_products.py [--tokens=16,32,64] [--rounds=3]

A served BERT-Base request spends most of its time in the six products of
each layer (query, key, value and attention output, 768 x 768; the
feed-forward pair, 768 x 3072 then 3072 x 768). Both frameworks hand them to
oneDNN, each to the copy it ships. This times them alone, outside any model:
  ours    our `Dense` layer (modeling/layers.py), as an export runs it, its
          weights in the compute precision and TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1
          as docs/serving.md advises;
  torch   torch.nn.functional.linear in inference mode, as Hugging Face's
          BertModel runs them (from bench/output/envs/hf when installed).
Each timing runs twelve layers' worth of one kind of product one after the
other (each output feeds the next, so no two overlap), in float32 and in
bfloat16, at `--tokens` rows (one request of that many tokens). Every
framework runs in a fresh process once per round, the order reversed every
other round; prints medians over rounds, ms per layer, the ratio (theirs /
ours, above 1 ours faster) and the oneDNN each framework ships (its version
and thread runtime, from oneDNN's verbose log).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # pylint: disable=g-import-not-at-top
import environments  # pylint: disable=g-import-not-at-top

FRAMEWORKS = ("ours", "torch")
DTYPES = ("float32", "bfloat16")
HIDDEN, INTERMEDIATE, LAYERS = 768, 3072, 12
REPEATS = 30


def median_ms(run):
  for _ in range(5):
    run()
  seconds = []
  for _ in range(REPEATS):
    start = time.perf_counter()
    run()
    seconds.append(time.perf_counter() - start)
  return 1000 * statistics.median(seconds)


def chains_ours(dtype):
  """Runs of LAYERS layers' attention products (4 of 768 x 768 each) and
  feed-forward pairs, through the layer our model uses."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from modeling import layers  # pylint: disable=g-import-not-at-top

  def dense(size_in, size_out):
    layer = layers.Dense(size_in, size_out, dtype=dtype)
    layer.build((None, size_in))
    return layer
  square = [dense(HIDDEN, HIDDEN) for _ in range(4 * LAYERS)]
  pairs = [(dense(HIDDEN, INTERMEDIATE), dense(INTERMEDIATE, HIDDEN)) for _ in range(LAYERS)]

  @tf.function
  def attention(x):
    for layer in square:
      x = layer(x)
    return x

  @tf.function
  def feed_forward(x):
    for up, down in pairs:
      x = down(up(x))
    return x

  def make(tokens):
    x = tf.cast(tf.random.stateless_normal([tokens, HIDDEN], [1, 2]), dtype)
    return (lambda: attention(x).numpy()), (lambda: feed_forward(x).numpy())
  return make


def chains_torch(dtype):
  import torch  # pylint: disable=g-import-not-at-top
  torch_dtype = getattr(torch, dtype)
  torch.manual_seed(0)

  def weight(size_in, size_out):  # As nn.Linear holds it: [out, in].
    return (0.02 * torch.randn(size_out, size_in)).to(torch_dtype), torch.zeros(
        size_out, dtype=torch_dtype)
  square = [weight(HIDDEN, HIDDEN) for _ in range(4 * LAYERS)]
  pairs = [(weight(HIDDEN, INTERMEDIATE), weight(INTERMEDIATE, HIDDEN)) for _ in range(LAYERS)]
  linear = torch.nn.functional.linear

  def attention(x):
    with torch.inference_mode():
      for w, b in square:
        x = linear(x, w, b)
    return x

  def feed_forward(x):
    with torch.inference_mode():
      for (w1, b1), (w2, b2) in pairs:
        x = linear(linear(x, w1, b1), w2, b2)
    return x

  def make(tokens):
    x = torch.randn(tokens, HIDDEN).to(torch_dtype)
    return (lambda: attention(x)), (lambda: feed_forward(x))
  return make


def worker(args):
  if args.probe:  # One product, for oneDNN's verbose banner (PyTorch's
    # float32 products go to MKL, its bfloat16 ones to oneDNN).
    make = (chains_torch if args.framework == "torch" else chains_ours)("bfloat16")
    make(8)[0]()
    return
  result = {}
  for dtype in DTYPES:
    make = (chains_torch if args.framework == "torch" else chains_ours)(dtype)
    for tokens in map(int, args.tokens.split(",")):
      attention, feed_forward = make(tokens)
      result["%s/%d" % (dtype, tokens)] = {
          "attention": median_ms(attention) / LAYERS,
          "feed_forward": median_ms(feed_forward) / LAYERS}
  common.report_result(result)


def command(args, framework, probe=False):
  python = environments.interpreter("hf") if framework == "torch" else sys.executable
  cmd = [python, os.path.abspath(__file__), "--worker", "--framework=" + framework,
         "--tokens=" + args.tokens]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  if framework == "ours":
    env.update(PYTHONPATH=common.REPO_ROOT, TF_ONEDNN_ASSUME_FROZEN_WEIGHTS="1")
  if probe:
    cmd.append("--probe")
    env["ONEDNN_VERBOSE"] = "1"
  return cmd, env


def onednn_banner(args, framework):
  cmd, env = command(args, framework, probe=True)
  out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
  version = re.search(r"info,(oneDNN v[\w.]+)", out)
  runtime = re.search(r"info,cpu,runtime:(\w+)", out)
  return "%s, %s runtime" % (version.group(1) if version else "oneDNN ?",
                             runtime.group(1) if runtime else "?")


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--tokens", default="16,32,64")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--framework")
  parser.add_argument("--probe", action="store_true")
  args = parser.parse_args()
  if args.worker:
    return worker(args)
  import bench_serving_dev  # pylint: disable=g-import-not-at-top
  print("cpu: " + bench_serving_dev.cpu_line())
  for framework in FRAMEWORKS:
    print("%-6s %s" % (framework, onednn_banner(args, framework)))
  rounds = {framework: [] for framework in FRAMEWORKS}
  for index in range(args.rounds):
    for framework in FRAMEWORKS if index % 2 == 0 else FRAMEWORKS[::-1]:
      cmd, env = command(args, framework)
      result = subprocess.run(cmd, capture_output=True, text=True, env=env)
      lines = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
      if result.returncode or not lines:
        sys.exit("%s failed:\n%s" % (framework, result.stderr[-2000:]))
      rounds[framework].append(json.loads(lines[-1][len("RESULT "):]))
  print("\nBERT-Base's products, ms per layer (medians of %d rounds; ratio: torch / ours, "
        "above 1 ours faster)" % args.rounds)
  print("  %-8s %6s  %-26s %-26s" % ("dtype", "tokens", "attention (4 x 768x768)",
                                     "feed-forward (768x3072, 3072x768)"))
  for key in rounds["ours"][0]:
    dtype, tokens = key.split("/")
    cells = []
    for part in ("attention", "feed_forward"):
      ours, torch = (statistics.median(r[key][part] for r in rounds[f]) for f in FRAMEWORKS)
      cells.append("%5.3f / %5.3f  %4.2fx" % (ours, torch, torch / ours))
    print("  %-8s %6s  %-26s %-26s" % (dtype, tokens, cells[0], cells[1]))


if __name__ == "__main__":
  main()
