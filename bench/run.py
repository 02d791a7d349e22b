"""Every benchmark, every peer, one run: `make bench` or

  python -m bench.run --original_dir=/path/to/google-research/bert [--quick]

Installs each peer in its own virtualenv (bench/environments.py), then runs
`--rounds` rounds; each round runs every benchmark for every peer, one
process at a time, so that the machine's slow spells fall on all peers alike.
Prints one table of the medians over rounds with our ratio to each peer, and
saves it as bench/output/results.{json,md,png}. bench/README.md says how to
read it. Without --original_dir (or $BERT_ORIGINAL_DIR) the original is
skipped.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


from bench import bench_create_pretraining_data
from bench import bench_model
from bench import bench_tokenizer
from bench import common
from bench import environments

PEERS = ("original", "hf", "keras_hub", "tf_models", "ours")
WORKER_TIMEOUT = 3600

# What each benchmark compares, and its sizes in a full and a --quick run.
# A fine-tuning step at BERT-Base is the slowest thing timed (batch 32, or
# batch 8 at sequence 384): those rows time fewer steps after one warm-up.
FULL = {"tokenize_mb": 4.0, "data_mb": 3.0,
        "train_sizes": ("tiny", "mini", "small", "base"), "finetune_size": "base",
        "steps": 5, "finetune_steps": 2, "infer_steps": 3, "rounds": 2}
QUICK = {"tokenize_mb": 0.5, "data_mb": 0.5,
         "train_sizes": ("tiny",), "finetune_size": "tiny", "steps": 5,
         "finetune_steps": 3, "infer_steps": 2, "rounds": 1}
CLASSIFY_BATCH = 32
SQUAD_BATCH = 8
# Rows that are modules of their own (bench.<module>), whose report joins
# the table's (full runs, or named in --only): real task data, a real
# pretrained model, served models. Each skips itself, in one line, when its
# data is missing. The fine-tuning comparison takes hours; it keeps finished
# runs and resumes. key: (module, its Markdown report, arguments).
REAL_DATA = {"hf_checkpoint": ("bench_hf_checkpoint", None, []),
             "pretrained_glue": ("bench_pretrained_glue", "pretrained_glue.md", []),
             "finetune_glue": ("bench_finetune_glue", None, []),
             "squad_predict": ("bench_squad_predict", None, []),
             "serving_dev": ("bench_serving_dev", "serving_dev.md", []),
             "serving_load": ("bench_serving_load", None,
                              ["--size=mini", "--clients=8", "--requests=4000"])}
# The peer environments a real-data row runs beyond the table's peers.
REAL_DATA_ENVIRONMENTS = {"serving_dev": ("hf", "ort")}


class Benchmark:
  """One row of the table: a metric, its unit and which way is better."""

  def __init__(self, key, title, unit, higher_is_better, peers, flops=None):
    self.key, self.title, self.unit = key, title, unit
    self.higher_is_better = higher_is_better
    self.peers = peers
    self.flops = flops  # Per unit of the metric, for the fraction of peak.

  def ours_better_by(self, ours, peer):
    """How many times better ours is than `peer` (above 1: ours wins)."""
    return ours / peer if self.higher_is_better else peer / ours

  def achieved_gflops(self, value):
    """FLOP/s the value stands for (for a time, FLOPs / seconds)."""
    if self.flops is None:
      return None
    return (self.flops * value if self.higher_is_better else self.flops / value) / 1e9


def model_flops(mode, size, batch):
  """Forward + backward FLOPs of one step (forward alone for inference),
  counting the matmuls that every implementation must do: 24 h^2 + 4 s h a
  token and layer, and the masked-LM head on its 20 positions only."""
  layers, hidden, _ = bench_model.SIZES[size]
  seq = bench_model.SQUAD_SEQ if mode == "squad" else bench_model.SEQ
  flops = batch * seq * layers * (24 * hidden * hidden + 4 * seq * hidden)
  if mode == "train":
    flops += batch * bench_model.PREDICTIONS * (
        2 * hidden * hidden + 2 * hidden * bench_model.VOCAB)
  return flops if mode == "infer" else 3 * flops


class Runner:
  """Runs the workers of one benchmark run, in the peers' interpreters."""

  def __init__(self, args, sizes, work_dir):
    self.args, self.sizes, self.work_dir = args, sizes, work_dir
    self.data_corpus = common.build_corpus(
        os.path.join(work_dir, "data_corpus.txt"), sizes["data_mb"])
    self.notes = {}

  def worker(self, peer, module, flags, label):
    cmd = [environments.interpreter(peer), "-m", "bench." + module] + flags
    original = self.args.original_dir if peer == "original" else None
    return common.run_worker(cmd, label, original, timeout=WORKER_TIMEOUT)

  def pretraining_data(self, peer):
    flags = ["--input_file=" + self.data_corpus, "--vocab_file=" + self.args.vocab_file,
             "--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
             "--masked_lm_prob=0.15", "--random_seed=12345", "--dupe_factor=10"]
    output = os.path.join(self.work_dir, "records-%s.tfrecord" % peer)
    python = environments.interpreter(peer)
    code_dir = None
    if peer == "ours":
      cmd, cwd = [python, "create_pretraining_data.py"], common.REPO_ROOT
    elif peer == "original":
      code_dir = common.original_code_dir(self.args.original_dir)
      cmd, cwd = [python, "create_pretraining_data.py"], code_dir
    else:  # tf_models: Model Garden's port of the original script.
      cmd, cwd = [python, "-m", "official.nlp.data.create_pretraining_data"], self.work_dir
    try:
      seconds, megabytes = common.run_measured(
          cmd + ["--output_file=" + output] + flags, cwd,
          os.path.join(self.work_dir, "records-%s.log" % peer))
    except RuntimeError as e:
      sys.stderr.write("pretraining data/%s: %s\n" % (peer, e))
      return None
    finally:
      common.cleanup(code_dir)
    ours = os.path.join(self.work_dir, "records-ours.tfrecord")
    if peer != "ours" and "records/" + peer not in self.notes and os.path.exists(ours):
      same = bench_create_pretraining_data.same_records(output, ours, 128, 20)
      self.notes["records/" + peer] = "records %s ours" % (
          "identical to" if same else "differ from")
    return {"data_seconds": seconds, "data_memory": megabytes}

  def model(self, peer, mode, size, batch, steps, warmup=None):
    variant = "loop" if peer == "ours" and mode == "train" else "f32"
    flags = ["--worker", "--peer=" + peer, "--variant=" + variant, "--size=" + size,
             "--mode=" + mode, "--batch=%d" % batch, "--steps=%d" % steps]
    if warmup is not None:
      flags.append("--warmup=%d" % warmup)
    result = self.worker(peer, "bench_model", flags, "%s/%s/%s" % (mode, size, peer))
    return result and result["seconds"]

  def matmul_peak(self):
    """GFLOP/s: the better of TensorFlow's and PyTorch's float32 matmul."""
    figures = {}
    for peer, framework in (("ours", "tf"), ("hf", "torch")):
      if peer in self.args.peers:
        result = self.worker(peer, "bench_matmul", ["--framework=" + framework],
                             "matmul/" + framework)
        if result:
          figures[framework] = result["gflops"]
    return figures


def plan(runner, sizes, peers):
  """(benchmark, measure) pairs in table order; measure(peer) -> {key: value}."""
  model_peers = [p for p in PEERS if p in peers]
  plans = [
      (Benchmark("data_seconds", "Pre-training data, wall time", "s", False,
                 [p for p in ("original", "tf_models", "ours") if p in peers]),
       runner.pretraining_data),
  ]
  data_memory = Benchmark("data_memory", "Pre-training data, peak memory", "MB", False,
                          plans[0][0].peers)

  def timing(mode, size, batch, steps, key, per_example=False, warmup=None):
    def measure(peer):
      seconds = runner.model(peer, mode, size, batch, steps, warmup)
      if seconds is None:
        return None
      return {key: batch / seconds if per_example else seconds}
    return measure

  for size in sizes["train_sizes"]:
    plans.append((Benchmark("train_" + size, "Pre-training step, BERT-%s, batch 8" %
                            size.capitalize(), "s", False, model_peers,
                            flops=model_flops("train", size, 8)),
                  timing("train", size, 8, sizes["steps"], "train_" + size)))
  size = sizes["finetune_size"]
  plans.append((Benchmark("classify", "Classifier fine-tuning, BERT-%s, batch %d" % (
      size.capitalize(), CLASSIFY_BATCH), "ex/s", True, model_peers,
                          flops=model_flops("classify", size, 1)),
                timing("classify", size, CLASSIFY_BATCH, sizes["finetune_steps"], "classify",
                       True, warmup=1)))
  plans.append((Benchmark("squad", "SQuAD fine-tuning, BERT-%s, batch %d, seq 384" % (
      size.capitalize(), SQUAD_BATCH), "ex/s", True, [p for p in model_peers if p != "keras_hub"],
                          flops=model_flops("squad", size, 1)),
                timing("squad", size, SQUAD_BATCH, sizes["finetune_steps"], "squad", True,
                       warmup=1)))
  plans.append((Benchmark("infer_1", "Inference latency, BERT-Base, batch 1", "ms", False,
                          model_peers, flops=model_flops("infer", "base", 1)),
                timing("infer", "base", 1, sizes["infer_steps"], "infer_1")))
  plans.append((Benchmark("infer_32", "Inference throughput, BERT-Base, batch 32", "ex/s",
                          True, model_peers, flops=model_flops("infer", "base", 1)),
                timing("infer", "base", 32, sizes["infer_steps"], "infer_32", True,
                       warmup=1)))
  return plans, data_memory


def versions():
  """Package versions of ours (this environment) and each peer's pins."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  ours = {}
  for name in ("tensorflow", "keras", "tensorflow-text", "numpy"):
    try:
      ours[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      pass
  peers = {p: spec["packages"] + spec["no_deps"] for p, spec in environments.PEERS.items()}
  return dict(peers, ours=["%s==%s" % kv for kv in sorted(ours.items())])


def ratio_text(benchmark, ours_rounds, peer_rounds):
  """`benchmark`'s cell "ours vs a peer": the ratio of the medians and the
  range of the rounds' own ratios (common.ratio_with_spread)."""
  return common.ratio_with_spread(benchmark.ours_better_by, ours_rounds, peer_rounds)


# Column titles of the README's summary.
PEER_NAMES = {"original": "original", "hf": "Hugging Face", "keras_hub": "keras-hub",
              "tf_models": "tf-models"}
# The tokenizer each peer's column shows in the summary's tokenization row.
PEER_TOKENIZERS = {"original": "original", "hf": "hf_fast", "keras_hub": "keras_hub",
                   "tf_models": "tf_models"}


def readme_summary(results):
  """The README's benchmark table, from a run's results.json: the machine
  once, then ours over each peer per row, with the spread over rounds."""
  m = results["machine"]
  peers = [p for p in PEER_NAMES if any(p in b["values"] for b in results["benchmarks"])]
  flags = ", ".join(m.get("cpu_flags") or [])
  # The arguments that made the run: --quick, and --rounds where it is not
  # that size's default.
  args = ["--quick"] if results.get("quick") else []
  if results["rounds"] != (QUICK if results.get("quick") else FULL)["rounds"]:
    args.append("--rounds=%d" % results["rounds"])
  lines = ["One `make bench%s%s` run on %s: %s%s, %d cores, %d round%s. How many times "
           "better ours is than each peer (above 1: faster, or less memory), the range "
           "over rounds in brackets:" % (
               " BERT_ORIGINAL_DIR=..." if "original" in peers else "",
               " BENCH_ARGS=%s" % (args[0] if len(args) == 1 else '"%s"' % " ".join(args))
               if args else "", results["date"], m["cpu"],
               " (%s)" % flags if flags else "", m["cores"], results["rounds"],
               "" if results["rounds"] == 1 else "s"), "",
           "| row | " + " | ".join("vs " + PEER_NAMES[p] for p in peers) + " |",
           "|---|" + "---:|" * len(peers)]
  ours_tokens = results.get("tokenizers", {}).get("ours", {})
  if ours_tokens:
    cells = []
    for p in peers:
      theirs = results["tokenizers"].get(PEER_TOKENIZERS[p], {})
      cells.append(" / ".join("%.1fx" % (ours_tokens[k] / theirs[k]) for k in
                              ("english_1", "mixed_1") if k in theirs and k in ours_tokens))
    lines.append("| Tokenization, one thread, English / mixed | %s |" % " | ".join(cells))
  for b in results["benchmarks"]:
    benchmark = Benchmark(b["key"], b["title"], b["unit"], b["higher_is_better"], [])
    ours = b["values"].get("ours", [])
    cells = [ratio_text(benchmark, ours, b["values"][p]) if p in b["values"] else ""
             for p in peers]
    lines.append("| %s | %s |" % (b["title"], " | ".join(cells)))
  return "\n".join(lines)


def table(benchmarks, medians, peak, peers, values=None):
  """The results as a Markdown table: medians, each model figure's share of
  the matmul peak, and how many times better ours is than each peer (with
  the spread over rounds when `values`, every round's figures, is given)."""
  rounds = values
  others = [p for p in peers if p != "ours"]
  head = ["benchmark", "unit"] + list(peers) + ["ours vs " + p for p in others]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for b in benchmarks:
    cells = [b.title, b.unit]
    for p in peers:
      value = medians.get(b.key, {}).get(p)
      if p not in b.peers:
        cells.append("n/a")
      elif value is None:
        cells.append("failed")
      else:
        shown = value * 1e3 if b.unit == "ms" else value  # Latency is kept in seconds.
        text = "%.4g" % shown
        if b.flops and peak:
          gflops = b.achieved_gflops(value)
          text += " (%.0f%%)" % (100 * gflops / peak)
        cells.append(text)
    ours = medians.get(b.key, {}).get("ours")
    for p in others:
      value = medians.get(b.key, {}).get(p)
      if rounds and p in rounds.get(b.key, {}):
        cells.append(ratio_text(b, rounds[b.key].get("ours", []), rounds[b.key][p]))
      else:
        cells.append("%.2fx" % b.ours_better_by(ours, value) if ours and value else "")
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def chart(benchmarks, medians, peers, path, title):
  """Ours vs each peer, one group of bars per benchmark (log scale)."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  import matplotlib.ticker  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  others = [p for p in peers if p != "ours"]
  rows = [b for b in benchmarks if medians.get(b.key, {}).get("ours")]
  fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) * max(1, len(others)) / 2 + 1.5))
  height = 0.8 / max(1, len(others))
  for i, p in enumerate(others):
    ys, xs = [], []
    for j, b in enumerate(rows):
      value = medians[b.key].get(p)
      if value:
        ys.append(j + i * height)
        xs.append(b.ours_better_by(medians[b.key]["ours"], value))
    ax.barh(ys, xs, height=height, label=p)
  ax.set_xscale("log")
  ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.5, 1, 2, 5, 10, 20, 50]))
  ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%gx"))
  ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
  ax.axvline(1.0, color="black", linewidth=0.8)
  ax.set_yticks([j + 0.4 - height / 2 for j in range(len(rows))])
  ax.set_yticklabels([b.title for b in rows], fontsize=8)
  ax.invert_yaxis()
  ax.set_xlabel("times better than the peer (above 1: ours wins; log scale)")
  ax.set_title(title, fontsize=9)
  ax.legend(fontsize=8)
  fig.tight_layout()
  common.save_png(fig, path, dpi=110)


def needed_environments(peers, real_data):
  """The table's peers, then the environments the real-data rows `real_data`
  run beyond them."""
  extra = [e for key in real_data for e in REAL_DATA_ENVIRONMENTS.get(key, ())]
  return list(dict.fromkeys(list(peers) + extra))


def real_data_reports(keys, output_dir):
  """Runs the REAL_DATA rows `keys`; the report of each (its Markdown file,
  when this run wrote it, or what it printed last)."""
  reports = []
  for key in keys:
    module, markdown, arguments = REAL_DATA[key]
    print("running %s (bench.%s) ..." % (key, module), flush=True)
    started = time.time()
    result = subprocess.run([sys.executable, "-m", "bench." + module] + arguments,
                            cwd=common.REPO_ROOT, capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    if result.returncode:
      sys.stderr.write("%s failed:\n%s\n" % (key, result.stderr[-3000:]))
      continue
    path = markdown and os.path.join(output_dir, markdown)
    if path and os.path.exists(path) and os.path.getmtime(path) >= started:
      with open(path, encoding="utf-8") as f:
        reports.append(f.read())
    else:
      reports.append("%s:\n\n%s\n" % (key, "\n".join(result.stdout.strip().splitlines()[-2:])))
  return reports


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--original_dir", default=os.environ.get("BERT_ORIGINAL_DIR"),
                      help="A checkout of google-research/bert.")
  parser.add_argument("--vocab_file", default=common.VOCAB)
  parser.add_argument("--quick", action="store_true", help="A smaller subset (bench/README.md).")
  parser.add_argument("--rounds", type=int, default=None,
                      help="Interleaved rounds (default 2, or 1 with --quick).")
  parser.add_argument("--peers", default=",".join(PEERS))
  parser.add_argument("--only", default="",
                      help="Comma-separated benchmark keys (e.g. tokenize,train_tiny).")
  parser.add_argument("--output_dir", default=environments.OUTPUT_DIR)
  parser.add_argument("--summary", default=None,
                      help="Print the README's table of this results.json, and stop.")
  args = parser.parse_args()
  if args.summary:
    with open(args.summary, encoding="utf-8") as f:
      print(readme_summary(json.load(f)))
    return
  sizes = dict(QUICK if args.quick else FULL)
  rounds = args.rounds or sizes["rounds"]
  args.peers = [p for p in args.peers.split(",") if p]
  if "original" in args.peers and not (
      args.original_dir and os.path.exists(os.path.join(args.original_dir, "modeling.py"))):
    print("original: skipped (pass --original_dir=<a google-research/bert checkout>)")
    args.peers.remove("original")
  if not os.path.exists(args.vocab_file):
    sys.exit("run.py: error: --vocab_file %s does not exist" % args.vocab_file)
  os.makedirs(args.output_dir, exist_ok=True)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

  only = set(args.only.split(",")) - {""}
  real_data = [key for key in REAL_DATA if (key in only if only else not args.quick)]
  started = time.time()
  for peer in needed_environments(args.peers, real_data):
    environments.ensure(peer)
  print("environments ready (%.0f s)" % (time.time() - started))
  if only and only <= set(REAL_DATA):
    print("\n".join(real_data_reports(real_data, args.output_dir)))
    return

  work_dir = tempfile.mkdtemp(prefix="bench_", dir=args.output_dir)
  runner = Runner(args, sizes, work_dir)
  plans, data_memory = plan(runner, sizes, args.peers)
  if args.only:
    keep = set(args.only.split(","))
    plans = [(b, m) for b, m in plans if b.key in keep or (
        b.key == "data_seconds" and "data_memory" in keep)]
  benchmarks = []
  for b, _ in plans:
    benchmarks.append(b)
    if b.key == "data_seconds":
      benchmarks.append(data_memory)
  values = {b.key: {p: [] for p in b.peers} for b in benchmarks}
  tokenizers = {}
  if not args.only or "tokenize" in args.only.split(","):
    # Tokenizers have a table of their own (bench/bench_tokenizer.py): more
    # tokenizers than peers, two corpora, one thread and all cores.
    tokenizers = bench_tokenizer.measure(
        work_dir, args.vocab_file, args.original_dir if "original" in args.peers else None,
        sizes["tokenize_mb"])

  started = time.time()
  for round_index in range(rounds):
    peak = runner.matmul_peak()
    for framework, gflops in peak.items():
      values.setdefault("matmul_" + framework, {}).setdefault("all", []).append(gflops)
    for benchmark, measure in plans:
      # Ours first, so the others' outputs can be checked against it.
      for peer in sorted(benchmark.peers, key=lambda p: p != "ours"):
        result = measure(peer) or {}
        for key, value in result.items():
          values[key][peer].append(value)
        if benchmark.key not in result:  # Failed: a gap keeps the rounds aligned.
          values[benchmark.key][peer].append(None)
        shown = ", ".join("%s %.4g" % kv for kv in result.items()) or "failed"
        print("[round %d/%d, %4.0f min] %-44s %-10s %s" % (
            round_index + 1, rounds, (time.time() - started) / 60, benchmark.title, peer,
            shown), flush=True)

  medians = {k: {p: statistics.median(x for x in v if x is not None)
                 if any(x is not None for x in v) else None for p, v in per_peer.items()}
             for k, per_peer in values.items()}
  peak = max([m["all"] for k, m in medians.items() if k.startswith("matmul_")] or [None])
  shown_peers = [p for p in PEERS if p in args.peers]
  info = common.machine()
  date = datetime.date.today().isoformat()
  title = "%s, %s (%d cores), %d round(s)%s" % (
      date, info["cpu"], info["cores"], rounds, ", --quick" if args.quick else "")
  markdown = table(benchmarks, medians, peak, shown_peers, values)
  notes = ["%s: %s" % kv for kv in sorted(runner.notes.items())]
  if peak:
    notes.insert(0, "float32 matmul peak: %.1f GFLOP/s (%s)" % (peak, ", ".join(
        "%s %.1f" % (k[len("matmul_"):], m["all"])
        for k, m in medians.items() if k.startswith("matmul_"))))
  report = "%s\n\n%s\n\n%s\n" % (title, markdown, "\n".join("- " + n for n in notes))
  if tokenizers:
    report += "\nTokenization, WordPiece (uncased):\n\n%s\n" % bench_tokenizer.table(tokenizers)
  report += "".join("\n" + text for text in real_data_reports(real_data, args.output_dir))
  print("\n" + report)
  common.write_text(os.path.join(args.output_dir, "results.md"), report)
  common.write_text(os.path.join(args.output_dir, "results.json"), json.dumps({
      "date": date, "machine": info, "versions": versions(), "quick": args.quick,
      "rounds": rounds,
      "sizes": sizes, "matmul_peak_gflops": peak, "notes": runner.notes,
      "tokenizers": tokenizers,
      "benchmarks": [{"key": b.key, "title": b.title, "unit": b.unit,
                      "higher_is_better": b.higher_is_better, "flops": b.flops,
                      "values": values[b.key], "medians": medians[b.key]}
                     for b in benchmarks]}, indent=1))
  chart(benchmarks, medians, shown_peers, os.path.join(args.output_dir, "results.png"), title)
  print("saved %s/results.{md,json,png}" % args.output_dir)
  common.cleanup(work_dir)


if __name__ == "__main__":
  main()
