"""Shared helpers for the side-by-side benchmarks: corpora and the original code."""

import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))
# The released uncased vocabulary, committed with the tests (Apache-2.0).
VOCAB = os.path.join(REPO_ROOT, "tests", "data", "vocab", "bert_uncased_vocab.txt")


# Lines of the scripts the man pages lack (Greek, emoji), mixed into the
# mixed-language corpus.
_GREEK = ("Η ΓΛΩΣΣΑ ΕΙΝΑΙ ΖΩΝΤΑΝΗ ΚΑΙ ΑΛΛΑΖΕΙ ΣΥΝΕΧΩΣ",
          "Ο Οδυσσέας ταξίδεψε δέκα χρόνια για να γυρίσει στην Ιθάκη.",
          "ΟΔΟΣ ΣΟΦΟΚΛΕΟΥΣ, ΑΘΗΝΑ: ΣΤΑΣΗ ΛΕΩΦΟΡΕΙΟΥ.",
          "Ἐν ἀρχῇ ἦν ὁ λόγος, καὶ ὁ λόγος ἦν πρὸς τὸν θεόν.")
_EMOJI = ("Great job 👍🏽 see you soon 😀", "Flags 🇩🇪 🇫🇷 🇯🇵 and a family 👨‍👩‍👧",
          "Weather: ☀️ then 🌧️, 18°C", "🎉🎉 release v2.0 🚀 is out!")


def build_mixed_corpus(path, target_mb, man_dir="/usr/share/man"):
  """About `target_mb` MB of mixed-language text, one line per line: the
  man pages installed here, taken language by language in turn (English
  and about 30 others: accented Latin, Cyrillic, CJK, Korean, Turkish), with
  Greek and emoji lines mixed in; the same file on every run (sorted files, a
  seeded shuffle)."""
  import gzip  # pylint: disable=g-import-not-at-top
  import random  # pylint: disable=g-import-not-at-top
  languages = [""] + sorted(d for d in os.listdir(man_dir) if not d.startswith("man"))
  pages = {lang: sorted(glob.glob(os.path.join(man_dir, lang, "man*", "*.gz")))
           for lang in languages}
  rng = random.Random(2026)
  lines, size, index = [], 0, 0
  while size < target_mb * 1e6 and any(index < len(p) for p in pages.values()):
    for lang in languages:
      if index >= len(pages[lang]):
        continue
      try:
        with gzip.open(pages[lang][index]) as f:
          text = f.read().decode("utf-8")
      except (OSError, UnicodeDecodeError):
        continue
      for line in text.splitlines():
        if line.strip():
          lines.append(line)
          size += len(line.encode("utf-8")) + 1
          if rng.random() < 0.05:
            extra = rng.choice(_GREEK + _EMOJI)
            lines.append(extra)
            size += len(extra.encode("utf-8")) + 1
    index += 1
  rng.shuffle(lines)
  with open(path, "w", encoding="utf-8") as out:
    kept = 0
    for line in lines:
      out.write(line + "\n")
      kept += len(line.encode("utf-8")) + 1
      if kept >= target_mb * 1e6:
        break
  return path


def _glue_documents():
  """Sentences of the GLUE files in ../shared/data, 10 per document."""
  sentences = []
  for path in sorted(glob.glob(os.path.join(SHARED_DATA, "glue", "*", "*.tsv"))):
    with open(path, encoding="utf-8") as f:
      for line in f:
        for field in line.rstrip("\n").split("\t"):
          if len(field.split()) >= 4:
            sentences.append(field.strip())
  return [sentences[i:i + 10] for i in range(0, len(sentences), 10)]


def build_corpus(path, target_mb):
  """Real English text of about `target_mb` MB in pre-training format.

  The King James Bible (bundled), then GLUE sentences from ../shared/data if
  present, then the Bible again until the size is reached.
  """
  from demo import corpus as demo_corpus  # pylint: disable=g-import-not-at-top
  documents = []
  for _, verses in demo_corpus.iter_kjv_chapters():
    documents.append([s for v in verses for s in demo_corpus.split_sentences(v)])
  extra = _glue_documents()
  size = 0
  with open(path, "w", encoding="utf-8") as out:
    rounds = 0
    while size < target_mb * 1e6:
      source = documents if rounds % 2 == 0 or not extra else extra
      for doc in source:
        text = "\n".join(doc) + "\n\n"
        out.write(text)
        size += len(text.encode("utf-8"))
        if size >= target_mb * 1e6:
          break
      rounds += 1
  return path


def original_code_dir(checkout):
  """A temporary copy of the original scripts that imports tf.compat.v1.

  The original (google-research/bert) is not part of this repository: pass
  the path of a checkout with --original_dir.
  """
  if not checkout or not os.path.exists(os.path.join(checkout, "tokenization.py")):
    return None
  target = tempfile.mkdtemp(prefix="bert_original_")
  for name in ("tokenization.py", "create_pretraining_data.py", "modeling.py",
               "optimization.py"):
    source = os.path.join(checkout, name)
    if os.path.exists(source):
      with open(source, encoding="utf-8") as f:
        text = f.read()
      text = text.replace("import tensorflow as tf\n",
                          "import tensorflow.compat.v1 as tf\n")
      with open(os.path.join(target, name), "w", encoding="utf-8") as f:
        f.write(text)
  return target


def import_original(code_dir, *names):
  """The original's modules `names`, imported from `code_dir` (a copy made by
  original_code_dir). Its scripts import one another by bare names
  (`import modeling`), so that folder goes first on the module path: a
  process that calls this imports none of ours under those names."""
  import importlib  # pylint: disable=g-import-not-at-top
  if code_dir not in sys.path:
    sys.path.insert(0, code_dir)
  return [importlib.import_module(name) for name in names]


def cleanup(path):
  if path:
    shutil.rmtree(path, ignore_errors=True)


def argument_parser(megabytes):
  """Flags every data benchmark takes: the original's checkout, vocab, size."""
  parser = argparse.ArgumentParser()
  parser.add_argument("--original_dir", default=os.environ.get("BERT_ORIGINAL_DIR"))
  parser.add_argument("--vocab_file", default=VOCAB)
  parser.add_argument("--megabytes", type=float, default=megabytes)
  return parser


def real_data_parser(description, output_name):
  """Flags of the benchmarks on real task data: a BERT-Mini config, the
  uncased vocabulary, the original's checkout and the JSON output."""
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument("--bert_config_file", default=os.path.join(
      SHARED_DATA, "bert_configs", "uncased_L-4_H-256_A-4.bert_config.json"))
  parser.add_argument("--vocab_file", default=VOCAB)
  parser.add_argument("--original_dir", default=os.environ.get("BERT_ORIGINAL_DIR"))
  parser.add_argument("--glue_dir", default=os.path.join(SHARED_DATA, "glue"))
  parser.add_argument("--squad_dir", default=os.path.join(SHARED_DATA, "squad"))
  parser.add_argument("--output", default=os.path.join(REPO_ROOT, "bench", "output",
                                                       output_name))
  return parser


# Where to get what a real-data row lacks.
GLUE_WHERE = "GLUE's download script, download_glue_data.py, writes it; --glue_dir"
SQUAD_WHERE = ("the SQuAD site (rajpurkar.github.io/SQuAD-explorer) has the dev files; "
               "--squad_dir")
CONFIG_WHERE = "a bert_config.json of the released small BERTs; --bert_config_file"


def skipped(row, path, where):
  """True, after one line naming what is missing and where to get it, when
  `path` does not exist: a real-data row without its data is skipped."""
  if os.path.exists(path):
    return False
  print("%s: skipped: no %s (%s)" % (row, path, where), flush=True)
  return True


def ratio_with_spread(better_by, ours_rounds, peer_rounds):
  """How many times better ours is than a peer, as every table prints it:
  the ratio of the medians over rounds, and in brackets the range of the
  rounds' own ratios (each round runs every peer once). When the rounds
  point both ways, the gap is inside the run-to-run spread: "within noise",
  no winner. `better_by(ours, peer)` is above 1 when ours is better; a round
  that failed on either side (None) is left out with its partner."""
  pairs = [(o, p) for o, p in zip(ours_rounds, peer_rounds) if o and p]
  if not pairs:
    return ""
  ratio = better_by(statistics.median(o for o, _ in pairs),
                    statistics.median(p for _, p in pairs))
  if len(pairs) == 1:
    return "%.2fx" % ratio
  each = [better_by(o, p) for o, p in pairs]
  spread = "%.2f-%.2fx" % (min(each), max(each))
  if min(each) < 1 < max(each):
    return "within noise (%s)" % spread
  return "%.2fx (%s)" % (ratio, spread)


def report_result(result):
  """What a worker process prints for `run_worker` to read."""
  print("RESULT " + json.dumps(result))


STARTED = "STARTED "


def mark_started():
  """Printed by a timed command once its libraries are imported: the
  driver counts the seconds after it as the command's work (start-up
  excluded), beside the whole command's."""
  print("%s%.6f" % (STARTED, time.time()), flush=True)


def seconds_after_start(stdout, finished):
  """The seconds from a command's mark_started line to `finished`
  (time.time()), or None without one."""
  marks = [float(l[len(STARTED):]) for l in stdout.splitlines() if l.startswith(STARTED)]
  return finished - marks[0] if marks else None


def host_stolen_seconds(stat_path="/proc/stat"):
  """CPU seconds the hypervisor has given to other machines since boot, over
  all CPUs (the `steal` column of /proc/stat); None where there is none.

  Read before and after a timed run: on a shared virtual machine it tells a
  round the host slowed from a slow program: rounds of the same worker
  slow down while the host takes CPU time.
  """
  try:
    with open(stat_path) as f:
      fields = f.readline().split()
  except OSError:
    return None
  if len(fields) < 9 or fields[0] != "cpu":
    return None
  return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def busy_cpu_seconds(stat_path="/proc/stat"):
  """CPU seconds this machine's CPUs have been busy since boot (user, nice,
  system, irq, softirq: not idle, I/O wait or steal); None where there is no
  /proc/stat. Read around a timed command: what the command itself did not
  use of it was other work sharing the machine."""
  try:
    with open(stat_path) as f:
      fields = f.readline().split()
  except OSError:
    return None
  if len(fields) < 8 or fields[0] != "cpu":
    return None
  user, nice, system, _, _, irq, softirq = (int(x) for x in fields[1:8])
  return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def stolen_between(before, after):
  return None if before is None or after is None else after - before


def worker_env(**overrides):
  """The environment of a benchmark worker: `python -m bench.<module>` from
  any folder and any peer's interpreter finds the repository on the module
  path; TensorFlow's start-up logging is off."""
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO_ROOT, **overrides)


def run_worker(cmd, label, original_dir=None, timeout=None):
  """Runs a benchmark worker (`cmd`, plus --original_dir when given) in its
  own process; returns the dict it reported, or None after printing why it
  failed."""
  if original_dir:
    cmd = cmd + ["--original_dir=" + original_dir]
  try:
    result = subprocess.run(cmd, capture_output=True, text=True, env=worker_env(),
                            timeout=timeout)
  except subprocess.TimeoutExpired:
    sys.stderr.write("%s took over %d s: skipped\n" % (label, timeout))
    return None
  for line in result.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[len("RESULT "):])
  sys.stderr.write("%s failed:\n%s\n" % (label, result.stderr[-3000:]))
  return None


def write_text(path, text):
  from plumbing import files  # pylint: disable=g-import-not-at-top
  files.write_text(path, text)


def save_png(figure, path, dpi):
  """A matplotlib figure as a PNG, written whole or not at all."""
  from plumbing import files  # pylint: disable=g-import-not-at-top
  with files.atomic_output(path, "wb") as f:
    figure.savefig(f, format="png", dpi=dpi)


# The CPU features that decide which kernels the frameworks run.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile")


def machine():
  """The machine a run measures: CPU model and its kernel-deciding flags,
  cores, memory, system, Python."""
  cpu, flags = platform.processor(), []
  try:
    with open("/proc/cpuinfo") as f:
      lines = f.read().splitlines()
    cpu = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("model name"))
    present = set(next(l.split(":", 1)[1] for l in lines if l.startswith("flags")).split())
    flags = [f for f in CPU_FLAGS if f in present]
    with open("/proc/meminfo") as f:
      memory = int(next(l.split()[1] for l in f if l.startswith("MemTotal"))) / 1024 ** 2
  except (OSError, StopIteration):
    memory = None
  return {"cpu": cpu, "cpu_flags": flags, "cores": os.cpu_count(),
          "memory_gb": round(memory, 1) if memory else None,
          "system": platform.platform(), "python": platform.python_version()}


def _memory(process):
  """Proportional set size: shared pages split among the processes sharing them.

  Summing plain RSS over a parent and its forked workers would count their
  shared pages several times.
  """
  try:
    return process.memory_full_info().pss
  except (AttributeError, NotImplementedError):
    return process.memory_info().rss


def run_measured(cmd, cwd, log_path, largest_process=False, env=None, every=0.05):
  """Runs cmd; returns (seconds, peak memory in MB of the process tree, or
  with `largest_process` the peak RSS of its largest single process, which
  is cheaper to poll and so disturbs several busy processes less). Memory
  is read every `every` seconds: reading a large process's proportional
  set size costs CPU time, so long commands are polled less often."""
  import psutil  # pylint: disable=g-import-not-at-top
  peak = [0]
  with open(log_path, "w") as log:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    ps = psutil.Process(proc.pid)

    def watch():
      while proc.poll() is None:
        try:
          tree = [ps] + ps.children(recursive=True)
          if largest_process:
            peak[0] = max([peak[0]] + [p.memory_info().rss for p in tree])
          else:
            peak[0] = max(peak[0], sum(_memory(p) for p in tree))
        except psutil.Error:
          pass
        time.sleep(every)
    watcher = threading.Thread(target=watch)
    watcher.start()
    code = proc.wait()
    seconds = time.perf_counter() - start
    watcher.join()
  if code != 0:
    raise RuntimeError("%s failed; see %s" % (cmd[1], log_path))
  return seconds, peak[0] / 1e6
