"""A served classifier under load, with bad requests among the good ones.

  python -m bench.bench_serving_load [--export_dir=DIR | --size=base]
      [--clients=8] [--requests=10000] [--output=bench/output/serving_load.json]

The export (run_classifier.py --export_dir's SavedModel; with no
--export_dir, one of a random-weight BERT of --size, exported here) is
loaded in a fresh process with TensorFlow and tensorflow-text only, as TF
Serving's loader does, and --clients threads send --requests requests in
all. Most are real sentence pairs (MRPC dev, ../shared/data/glue; made-up
ones without it), one at a time; the rest are the bad ones a server meets:
empty strings, invalid UTF-8 bytes, a 1 MB text, a batch of 1,000 pairs, a
batch over the export's limit, and a request without text_b. It checks:
  * every good request gets the answer it gets when sent alone;
  * every bad one gets a defined answer (empty strings and the 1,000-pair
    batch: answers; invalid UTF-8: the answer for the text without those
    bytes, as FullTokenizer reads it) or a clear error (over a limit; the
    missing input), and the process keeps serving;
  * memory stays bounded: peak RSS at the end against after the first
    tenth of the requests (which already held every kind of bad request).
Prints latency p50/p99 of the good requests, requests/s, the checks'
counts and RSS; writes them to --output as JSON. Exits 1 if a check fails.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

from bench import common

MAX_SEQ_LENGTH = 128
BAD_KINDS = ("empty", "invalid_utf8", "one_megabyte", "batch_1000", "over_limit", "no_text_b")


def good_pairs(count):
  """Real MRPC dev pairs when ../shared/data is here, else made-up ones."""
  path = os.path.join(common.SHARED_DATA, "glue", "MRPC", "dev.tsv")
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      rows = [line.rstrip("\n").split("\t") for line in f][1:count + 1]
    return [(row[3], row[4]) for row in rows]
  return [("The cat number %d sat on the mat." % i, "A cat sat on mat %d." % i)
          for i in range(count)]


def peak_rss_mb():
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def serve_under_load(export_dir, clients, requests, max_batch_size):
  """The worker: loads the export like TF Serving and sends the requests;
  returns the report (a dict)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401 pylint: disable=g-import-not-at-top,unused-import
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]

  def ask(text_a, text_b):
    out = serve(text_a=tf.constant(text_a, tf.string), text_b=tf.constant(text_b, tf.string))
    return out["probabilities"].numpy()

  pairs = good_pairs(40)
  alone = [ask([a], [b]) for a, b in pairs]  # Each good request sent alone, first.
  garbled = b"The cat \xff\xfe sat \xc3( on the mat."
  expected = {
      "empty": ask([""], [""]),
      "invalid_utf8": ask(["The cat  sat ( on the mat."], ["A cat."]),
  }

  def bad_request(kind):
    """What the server answers to one bad request: 'answer' (checked), or
    'error: <first line>'."""
    try:
      if kind == "empty":
        ok = np.allclose(ask([""], [""]), expected["empty"], atol=1e-6)
      elif kind == "invalid_utf8":
        ok = np.allclose(ask([garbled], ["A cat."]), expected["invalid_utf8"], atol=1e-6)
      elif kind == "one_megabyte":
        ask(["word " * 200_000], [""])
        return "answer (no limit?)"
      elif kind == "batch_1000":
        a, b = zip(*(pairs[i % len(pairs)] for i in range(1000)))
        out = ask(list(a), list(b))
        ok = out.shape == (1000, 2) and np.allclose(out[:len(pairs)],
                                                    np.concatenate(alone), atol=1e-5)
      elif kind == "over_limit":
        ask(["A cat."] * (max_batch_size + 1), [""] * (max_batch_size + 1))
        return "answer (no limit?)"
      else:  # no_text_b
        serve(text_a=tf.constant(["A cat."]))
        return "answer (no check?)"
      return "answer" if ok else "wrong answer"
    except (tf.errors.InvalidArgumentError, TypeError, ValueError) as error:
      limit = re.search(r"assertion failed: \[([^\]]*)\]", str(error))
      return "error: " + (limit.group(1) if limit else str(error).strip().splitlines()[0][:120])

  # Every tenth request is a bad one, the kinds in turn.
  schedule = [("bad", BAD_KINDS[(i // 10) % len(BAD_KINDS)]) if i % 10 == 9
              else ("good", i % len(pairs)) for i in range(requests)]
  lock = threading.Lock()
  # One bad request at a time: the peak memory of the largest ones (the
  # 1,000-pair batch) is then the same early and late, and growth is a leak.
  one_bad_request = threading.Lock()
  results = {"latencies": [], "mismatches": 0, "bad": {k: {} for k in BAD_KINDS},
             "crashes": 0}
  position = [0]
  first_tenth_rss = [None]

  def client():
    while True:
      with lock:
        if position[0] >= len(schedule):
          return
        index = position[0]
        position[0] += 1
        if index == len(schedule) // 10:
          first_tenth_rss[0] = peak_rss_mb()
      what, value = schedule[index]
      try:
        if what == "good":
          start = time.perf_counter()
          out = ask([pairs[value][0]], [pairs[value][1]])
          seconds = time.perf_counter() - start
          with lock:
            results["latencies"].append(seconds)
            if not np.allclose(out, alone[value], atol=1e-6):
              results["mismatches"] += 1
        else:
          with one_bad_request:
            outcome = bad_request(value)
          with lock:
            results["bad"][value][outcome] = results["bad"][value].get(outcome, 0) + 1
      except Exception:  # pylint: disable=broad-except
        with lock:
          results["crashes"] += 1

  started = time.perf_counter()
  threads = [threading.Thread(target=client) for _ in range(clients)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  elapsed = time.perf_counter() - started
  latencies = sorted(results["latencies"])
  return {
      "clients": clients, "requests": requests, "seconds": elapsed,
      "requests_per_second": requests / elapsed,
      "good_p50_ms": 1000 * latencies[len(latencies) // 2],
      "good_p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
      "good_requests": len(latencies), "mismatches": results["mismatches"],
      "crashes": results["crashes"], "bad": results["bad"],
      "peak_rss_mb_first_tenth": first_tenth_rss[0], "peak_rss_mb_end": peak_rss_mb(),
  }


def failed_checks(report):
  """The checks the report fails, as lines (none: all passed)."""
  failures = []
  if report["mismatches"] or report["crashes"]:
    failures.append("%d good requests answered differently from alone, %d crashed" %
                    (report["mismatches"], report["crashes"]))
  expected = {"empty": "answer", "invalid_utf8": "answer", "batch_1000": "answer",
              "one_megabyte": "error: ", "over_limit": "error: ", "no_text_b": "error: "}
  for kind, outcomes in report["bad"].items():
    if not outcomes or any(not o.startswith(expected[kind]) or
                           (expected[kind] == "answer" and o != "answer") for o in outcomes):
      failures.append("%s: %s" % (kind, outcomes))
  if report["peak_rss_mb_end"] > 1.1 * report["peak_rss_mb_first_tenth"]:
    failures.append("peak RSS grew from %.0f MB to %.0f MB" % (
        report["peak_rss_mb_first_tenth"], report["peak_rss_mb_end"]))
  return failures


def export_random_classifier(size, export_dir):
  from bench import bench_model  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from serving import classifier  # pylint: disable=g-import-not-at-top
  config = modeling.BertConfig.from_dict(
      dict(bench_model.config_dict(size), vocab_size=bench_model.VOCAB))
  vocab = common.VOCAB
  classifier.export_classifier(modeling.BertClassifier(config, num_labels=2), export_dir,
                               vocab, True, MAX_SEQ_LENGTH, ["0", "1"])


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--export_dir")
  parser.add_argument("--size", default="base")
  parser.add_argument("--clients", type=int, default=8)
  parser.add_argument("--requests", type=int, default=10000)
  parser.add_argument("--max_batch_size", type=int, default=1024,
                      help="The export's --serving_max_batch_size.")
  parser.add_argument("--output", default=os.path.join(common.REPO_ROOT, "bench", "output",
                                                       "serving_load.json"))
  parser.add_argument("--worker", action="store_true")
  args = parser.parse_args()
  if args.worker:
    print("REPORT " + json.dumps(serve_under_load(args.export_dir, args.clients, args.requests,
                                                  args.max_batch_size)))
    return 0
  with tempfile.TemporaryDirectory() as directory:
    export_dir = args.export_dir
    if not export_dir:
      export_dir = os.path.join(directory, "export")
      export_random_classifier(args.size, export_dir)
    result = subprocess.run(
        [sys.executable, "-m", "bench.bench_serving_load", "--worker", "--export_dir=" + export_dir,
         "--clients=%d" % args.clients, "--requests=%d" % args.requests,
         "--max_batch_size=%d" % args.max_batch_size],
        cwd=common.REPO_ROOT, capture_output=True, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  lines = [l for l in result.stdout.splitlines() if l.startswith("REPORT ")]
  if result.returncode or not lines:
    sys.stderr.write(result.stderr[-3000:])
    return 1
  report = json.loads(lines[-1][len("REPORT "):])
  os.makedirs(os.path.dirname(args.output), exist_ok=True)
  with open(args.output, "w") as f:
    json.dump(report, f, indent=2)
  print("%d clients, %d requests: %.1f requests/s; good requests p50 %.1f ms, p99 %.1f ms" % (
      report["clients"], report["requests"], report["requests_per_second"],
      report["good_p50_ms"], report["good_p99_ms"]))
  print("peak RSS %.0f MB after the first tenth, %.0f MB at the end" % (
      report["peak_rss_mb_first_tenth"], report["peak_rss_mb_end"]))
  for kind, outcomes in report["bad"].items():
    print("  %-13s %s" % (kind, outcomes))
  failures = failed_checks(report)
  for failure in failures:
    print("FAILED: " + failure)
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
