"""The Beam pipeline's cost on one machine: DirectRunner vs the one-process tool.

  python bench/bench_beam.py [--corpus_mb=10 --files=10 --workers=2]

The same corpus (real text, split into --files input files) goes through
  one process   create_pretraining_data --output_dir (sharded mode, one
                tokenization process), and
  Beam          beam_pretraining_data on the DirectRunner in multi-process
                mode with --workers workers,
with the original's default generation flags. Reported: wall time,
records/s (and per worker), the peak memory of the busiest process, and
that the two sets of records are equal. A last run gives Beam one input
file only: a worker's peak memory should not grow with the corpus, only
with the file it holds.
"""

import argparse
import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_create_pretraining_data  # pylint: disable=g-import-not-at-top,wrong-import-position
import common  # pylint: disable=g-import-not-at-top,wrong-import-position


def split_corpus(path, directory, files):
  """The corpus's documents dealt into `files` files of about equal size."""
  with open(path, encoding="utf-8") as f:
    documents = [d for d in f.read().split("\n\n") if d.strip()]
  os.makedirs(directory, exist_ok=True)
  outputs = [open(os.path.join(directory, "part-%03d.txt" % i), "w", encoding="utf-8")
             for i in range(files)]
  per_file = (len(documents) + files - 1) // files
  for i, document in enumerate(documents):
    outputs[i // per_file].write(document.strip("\n") + "\n\n")
  for f in outputs:
    f.close()
  return sorted(glob.glob(os.path.join(directory, "part-*.txt")))


def run_measured(args, log_path):
  """Runs `python args`; returns (seconds, peak memory in MB of its largest
  single process: the driver or one worker)."""
  return bench_create_pretraining_data.run_measured(
      [sys.executable] + args, common.REPO_ROOT, log_path, largest_process=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def records(pattern):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return sorted(r.numpy() for p in sorted(glob.glob(pattern)) for r in tf.data.TFRecordDataset(p))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus_mb", type=float, default=10.0)
  parser.add_argument("--files", type=int, default=10)
  parser.add_argument("--workers", type=int, default=2)
  parser.add_argument("--vocab_file", default=common.VOCAB)
  parser.add_argument("--output_dir", default=os.path.join(common.REPO_ROOT, "bench", "output"))
  args = parser.parse_args()
  work = tempfile.mkdtemp(prefix="bench_beam_")
  corpus = common.build_corpus(os.path.join(work, "corpus.txt"), args.corpus_mb)
  inputs = split_corpus(corpus, os.path.join(work, "parts"), args.files)
  flags = ["--vocab_file=" + args.vocab_file, "--do_lower_case=True"]
  runs = {}
  seconds, peak = run_measured(
      ["-m", "data_prep.create_pretraining_data", "--input_file=%s/parts/part-*" % work,
       "--output_dir=%s/one_process" % work, "--num_workers=1"] + flags,
      os.path.join(work, "one_process.log"))
  expected = records("%s/one_process/*.tfrecord" % work)
  runs["one process"] = dict(seconds=seconds, peak_mb=peak, processes=1)
  beam_options = ["--direct_running_mode=multi_processing",
                  "--direct_num_workers=%d" % args.workers]
  seconds, peak = run_measured(
      ["-m", "data_prep.beam_pretraining_data", "--input_file=%s/parts/part-*" % work,
       "--output_dir=%s/beam" % work] + flags + beam_options, os.path.join(work, "beam.log"))
  same = records("%s/beam/*.tfrecord*" % work) == expected
  runs["Beam, %d workers" % args.workers] = dict(seconds=seconds, peak_mb=peak,
                                                 processes=args.workers)
  seconds, peak = run_measured(
      ["-m", "data_prep.beam_pretraining_data", "--input_file=" + inputs[0],
       "--output_dir=%s/beam_one_file" % work] + flags + beam_options,
      os.path.join(work, "beam_one_file.log"))
  runs["Beam, 1 of the %d files" % args.files] = dict(seconds=seconds, peak_mb=peak,
                                                      processes=args.workers)
  count = len(expected)
  with open(os.path.join(work, "one_process.log")) as f:  # "Wrote N total instances in Xs."
    one_busy = sum(float(line.rsplit(" in ", 1)[1].rstrip("s.\n"))
                   for line in f if "total instances in" in line)
  with open(os.path.join(work, "beam", "summary.json")) as f:
    beam_busy = json.load(f)["worker_busy_ms"] / 1000.0
  runs["one process"]["busy_seconds"] = one_busy
  runs["Beam, %d workers" % args.workers]["busy_seconds"] = beam_busy
  lines = ["Corpus: %.1f MB in %d files, %d records; Beam's records %s the one-process tool's."
           % (args.corpus_mb, args.files, count, "equal" if same else "DIFFER FROM"), "",
           "| run | wall s | records/s | records/s per process | peak MB of one process |",
           "|---|---:|---:|---:|---:|"]
  for name, run in runs.items():
    n = count if "1 of" not in name else None
    rate = "%.0f" % (n / run["seconds"]) if n else "-"
    per = "%.0f" % (n / run["seconds"] / run["processes"]) if n else "-"
    lines.append("| %s | %.1f | %s | %s | %.0f |" % (name, run["seconds"], rate, per,
                                                    run["peak_mb"]))
  one = runs["one process"]
  beam = runs["Beam, %d workers" % args.workers]
  ratio = one["seconds"] / beam["seconds"]
  per_worker = ratio / args.workers
  busy_ratio = one_busy / beam_busy
  lines += ["", "Per worker, from wall time: %.2f of the one-process tool's records/s "
            "(wall-time speed-up with %d workers: %.2fx; the one-file run shows the "
            "runner's fixed start-up cost)." % (per_worker, args.workers, ratio),
            "Per worker, from the time workers spent generating and writing (%.1f s in "
            "all, vs %.1f s of the one-process tool): %.2f of the one-process tool's "
            "records/s." % (beam_busy, one_busy, busy_ratio)]
  report = "\n".join(lines)
  print(report)
  os.makedirs(args.output_dir, exist_ok=True)
  with open(os.path.join(args.output_dir, "beam.json"), "w") as f:
    json.dump(dict(runs=runs, records=count, same_records=same, corpus_mb=args.corpus_mb,
                   files=args.files, per_worker_ratio=per_worker,
                   busy_per_worker_ratio=busy_ratio), f, indent=2)
  with open(os.path.join(args.output_dir, "beam.md"), "w") as f:
    f.write(report + "\n")
  common.cleanup(work)
  if not same:
    sys.exit(1)


if __name__ == "__main__":
  main()
