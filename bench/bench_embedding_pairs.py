"""Fine-tuning sentence vectors on pairs: ours (run_embedding_pairs.py)
against sentence-transformers' own trainer, from the same model, on the same
pairs, steps, batch and learning rate, several seeds; STS-B dev Spearman
before and after, and whole-command seconds on this machine.

  flock /tmp/bench.lock python -m bench.bench_embedding_pairs [--seeds=1,2,3]
      [--learning_rate=2e-5] [--epochs=1] [--glue_dir=../shared/data/glue]

The model: all-MiniLM-L6-v2 (bench/pretrained.py), read by both sides from
the same files (ours converted by bert-convert-checkpoint). The pairs:
MRPC's training pairs labelled paraphrases and STS-B's training pairs
scored 4 or more, as (anchor, positive); scored: STS-B's dev pairs. GLUE's
TSV files are read field by field (no quoting), the same rows for both.
The recipe: batch 32, --epochs over the pairs (the last partial batch
dropped, so both take int(pairs / 32) steps), 10% linear warm-up, then
linear decay, MultipleNegativesRankingLoss with scale 20, the model's
pooling, normalisation and 256 tokens. Per seed, one command each:
  ours  run_embedding_pairs.py --do_train --do_eval --seed=N with Hugging
        Face Trainer's optimizer (--adam_bias_correction --adam_epsilon=1e-8
        --weight_decay_rate=0 --decay_after_warmup --clip_dense_norm) and a
        new order of the whole file each epoch (its default);
  st    SentenceTransformerTrainer with the recipe, seed=N and its defaults
        otherwise (the same optimizer; its default batch sampler, which
        does not keep duplicates out of a batch, as ours does not), then
        EmbeddingSimilarityEvaluator on the dev pairs (Spearman and Pearson
        of cosine similarity), in its own process.
"Before" is each side's score of the model as it comes. Each of our
trained runs is then converted to a Hugging Face directory
(bert-convert-checkpoint --output_format=huggingface), loaded by
sentence-transformers and scored by its evaluator; its vectors of the dev
sentences are set against embed.py's of the run (largest difference). Peers
take turns (the order flips with each seed). Finished runs are kept in
bench/output/embedding_pairs/ and not run again. Prints the table and
writes docs/benchmarks/embedding_pairs.{md,json} (--page) with the machine,
date and command. Run it under `flock /tmp/bench.lock` so that no other
timed benchmark runs meanwhile; the CPU seconds other work took during each
run are recorded beside it.
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

from bench import common
from bench import environments
from bench import pretrained

OUTPUT = os.path.join(common.REPO_ROOT, "bench", "output", "embedding_pairs")
BATCH, EVAL_BATCH, WARMUP, SCALE = 32, 32, 0.1, 20.0
HF_OPTIMIZER = ["--adam_bias_correction", "--adam_epsilon=1e-8", "--weight_decay_rate=0",
                "--decay_after_warmup", "--clip_dense_norm"]


def _tsv(path, encoding="utf-8"):
  with open(path, encoding=encoding) as f:
    return [line.rstrip("\n").split("\t") for line in f][1:]


def _write_jsonl(path, rows):
  common.write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def make_data(glue_dir, directory, max_pairs=None):
  """train.jsonl (anchor, positive; the first `max_pairs`), dev.jsonl
  (sentence1, sentence2, score) and dev_sentences.txt (each dev sentence
  once); the count of pairs."""
  pairs = [{"anchor": r[3], "positive": r[4]}
           for r in _tsv(os.path.join(glue_dir, "MRPC", "train.tsv"), "utf-8-sig")
           if r[0] == "1"]
  pairs += [{"anchor": r[7], "positive": r[8]}
            for r in _tsv(os.path.join(glue_dir, "STS-B", "train.tsv")) if float(r[9]) >= 4.0]
  pairs = pairs[:max_pairs]
  dev = [{"sentence1": r[7], "sentence2": r[8], "score": float(r[9])}
         for r in _tsv(os.path.join(glue_dir, "STS-B", "dev.tsv"))]
  os.makedirs(directory, exist_ok=True)
  _write_jsonl(os.path.join(directory, "train.jsonl"), pairs)
  _write_jsonl(os.path.join(directory, "dev.jsonl"), dev)
  sentences = sorted({r[k] for r in dev for k in ("sentence1", "sentence2")})
  common.write_text(os.path.join(directory, "dev_sentences.txt"),
                    "".join(s + "\n" for s in sentences))
  return len(pairs)


def _read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


# ---------------------------------------------------------------- sentence-transformers' side


def worker_st(args):
  """Trains (--seed) or only scores (no --seed) in the Hugging Face peer's
  environment; writes result.json (and with --vectors_of the vectors of
  those lines) to --output_dir."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import sentence_transformers  # pylint: disable=g-import-not-at-top
  from sentence_transformers.sentence_transformer import evaluation  # pylint: disable=g-import-not-at-top
  from sentence_transformers.sentence_transformer import losses  # pylint: disable=g-import-not-at-top
  common.mark_started()
  torch.set_num_threads(os.cpu_count())
  model = sentence_transformers.SentenceTransformer(args.model_dir, device="cpu")
  result = {"max_seq_length": model.max_seq_length}
  if args.seed is not None:
    import datasets  # pylint: disable=g-import-not-at-top
    pairs = _read_jsonl(os.path.join(args.data_dir, "train.jsonl"))
    steps = int(len(pairs) / BATCH * args.epochs)
    training = sentence_transformers.SentenceTransformerTrainingArguments(
        output_dir=os.path.join(args.output_dir, "trainer"), per_device_train_batch_size=BATCH,
        num_train_epochs=args.epochs, learning_rate=args.learning_rate,
        warmup_steps=int(steps * WARMUP), dataloader_drop_last=True, seed=args.seed,
        report_to="none", save_strategy="no", logging_strategy="no", disable_tqdm=True,
        use_cpu=True)
    trainer = sentence_transformers.SentenceTransformerTrainer(
        model=model, args=training, loss=losses.MultipleNegativesRankingLoss(model, scale=SCALE),
        train_dataset=datasets.Dataset.from_dict(
            {k: [p[k] for p in pairs] for k in ("anchor", "positive")}))
    output = trainer.train()
    result.update(steps=output.global_step, train_seconds=output.metrics["train_runtime"])
  dev = _read_jsonl(os.path.join(args.data_dir, "dev.jsonl"))
  scores = evaluation.EmbeddingSimilarityEvaluator(
      [d["sentence1"] for d in dev], [d["sentence2"] for d in dev], [d["score"] for d in dev],
      batch_size=EVAL_BATCH, similarity_fn_names=["cosine"])(model)
  result.update(spearman=scores["spearman_cosine"], pearson=scores["pearson_cosine"])
  if args.vectors_of:
    with open(args.vectors_of, encoding="utf-8") as f:
      lines = f.read().splitlines()
    np.save(os.path.join(args.output_dir, "vectors.npy"),
            model.encode(lines, batch_size=EVAL_BATCH, convert_to_numpy=True))
  common.write_text(os.path.join(args.output_dir, "result.json"), json.dumps(result) + "\n")


def _st_command(args, data_dir, output_dir, model_dir, seed=None, vectors_of=None):
  command = [environments.python_of("hf"), "-m", "bench.bench_embedding_pairs", "--worker",
             "--data_dir=" + data_dir, "--output_dir=" + output_dir, "--model_dir=" + model_dir,
             "--learning_rate=%g" % args.learning_rate, "--epochs=%g" % args.epochs]
  if seed is not None:
    command.append("--seed=%d" % seed)
  if vectors_of:
    command.append("--vectors_of=" + vectors_of)
  return command


# ---------------------------------------------------------------- ours


def _ours_command(args, data_dir, output_dir, checkpoint_dir, model_dir, seed=None):
  """run_embedding_pairs.py: trains and scores with a seed, else scores the
  model as it comes."""
  model = ["--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
           "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
           "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
           "--sentence_transformers_dir=" + model_dir]
  command = [sys.executable, os.path.join(common.REPO_ROOT, "run_embedding_pairs.py"),
             "--do_eval", "--dev_file=" + os.path.join(data_dir, "dev.jsonl"),
             "--eval_batch_size=%d" % EVAL_BATCH, "--output_dir=" + output_dir,
             "--xla_cache_dir=" + os.path.join(OUTPUT, "xla_cache")] + model
  if seed is None:
    return command
  return command + [
      "--do_train", "--train_file=" + os.path.join(data_dir, "train.jsonl"),
      "--train_batch_size=%d" % BATCH, "--num_train_epochs=%g" % args.epochs,
      "--learning_rate=%g" % args.learning_rate, "--warmup_proportion=%g" % WARMUP,
      "--scale=%g" % SCALE, "--seed=%d" % seed] + HF_OPTIMIZER


def _eval_results(output_dir):
  with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
    values = dict(line.strip().split(" = ", 1) for line in f if " = " in line)
  return {"spearman": float(values["eval_spearman"]), "pearson": float(values["eval_pearson"]),
          "steps": int(values["global_step"])}


def _run(cmd, label, log_path):
  """Runs `cmd` (its output kept in `log_path`); (wall seconds, its CPU
  seconds, CPU seconds other work on the machine took meanwhile), or None
  after printing why it failed."""
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  busy = common.busy_cpu_seconds()
  start = time.perf_counter()
  result = subprocess.run(cmd, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=common.worker_env())
  seconds = time.perf_counter() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  common.write_text(log_path, result.stdout + result.stderr)
  if result.returncode:
    sys.stderr.write("%s failed:\n%s\n" % (label, result.stderr[-3000:]))
    return None
  cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
  busy = common.stolen_between(busy, common.busy_cpu_seconds())
  return seconds, cpu, None if busy is None else max(busy - cpu, 0.0)


def _kept(record):
  if os.path.exists(record):
    with open(record, encoding="utf-8") as f:
      return json.load(f)
  return None


def run_one(args, peer, seed, data_dir, checkpoint_dir, model_dir):
  """One run (a seed: trained; None: the model as it comes), or its kept result."""
  name = "%s-%s" % (peer, "before" if seed is None else "seed%d" % seed)
  record = os.path.join(args.output_dir, "runs", name + ".json")
  kept = _kept(record)
  if kept:
    return kept
  work = os.path.join(args.output_dir, "work", name)
  shutil.rmtree(work, ignore_errors=True)
  os.makedirs(work)
  os.makedirs(os.path.dirname(record), exist_ok=True)
  if peer == "ours":
    cmd = _ours_command(args, data_dir, work, checkpoint_dir, model_dir, seed)
  else:
    cmd = _st_command(args, data_dir, work, model_dir, seed)
  outcome = _run(cmd, name, os.path.join(args.output_dir, "runs", name + ".log"))
  if outcome is None:
    return None
  if peer == "ours":
    result = _eval_results(work)
  else:
    with open(os.path.join(work, "result.json"), encoding="utf-8") as f:
      result = json.load(f)
  result.update(seconds=outcome[0], cpu_seconds=outcome[1], other_cpu_seconds=outcome[2],
                date=datetime.date.today().isoformat())
  if peer == "ours" and seed is not None:
    result["loaded_by_sentence_transformers"] = check_loading(args, work, data_dir,
                                                              checkpoint_dir, name)
  common.write_text(record, json.dumps(result, indent=2) + "\n")
  shutil.rmtree(work, ignore_errors=True)
  print("%-18s spearman %.4f  pearson %.4f  %6.1f s (CPU %6.1f s; other work %.0f CPU s)" % (
      name, result["spearman"], result["pearson"], outcome[0], outcome[1], outcome[2] or 0),
        flush=True)
  return result


def check_loading(args, run_dir, data_dir, checkpoint_dir, name):
  """Our run converted to a Hugging Face directory and loaded by
  sentence-transformers: its evaluator's scores, and the largest difference
  between its vectors and embed.py's of the dev sentences."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  hf_dir, log_dir = os.path.join(run_dir, "hf"), os.path.join(args.output_dir, "runs")
  sentences = os.path.join(data_dir, "dev_sentences.txt")
  model = ["--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
           "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json")]
  steps = [
      ("convert", [sys.executable, "convert_checkpoint.py", "--input_checkpoint=" + run_dir,
                   "--output_checkpoint=" + hf_dir, "--output_format=huggingface"] + model),
      ("embed", [sys.executable, "embed.py", "--input_file=" + sentences,
                 "--output_file=" + os.path.join(run_dir, "ours.npy"),
                 "--init_checkpoint=" + run_dir, "--sentence_transformers_dir=" + run_dir,
                 "--batch_size=%d" % EVAL_BATCH] + model),
      ("load", _st_command(args, data_dir, run_dir, hf_dir, vectors_of=sentences))]
  for step, cmd in steps:
    if _run(cmd, "%s %s" % (name, step), os.path.join(log_dir, "%s-%s.log" % (name, step))) is None:
      return None
  with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as f:
    loaded = json.load(f)
  difference = np.abs(np.load(os.path.join(run_dir, "ours.npy")) -
                      np.load(os.path.join(run_dir, "vectors.npy"))).max()
  return {"spearman": loaded["spearman"], "pearson": loaded["pearson"],
          "max_seq_length": loaded["max_seq_length"],
          "largest_vector_difference": float(difference)}


# ---------------------------------------------------------------- the report


def mean_sd(values):
  sd = statistics.stdev(values) if len(values) > 1 else 0.0
  return "%.2f ± %.2f" % (100 * statistics.mean(values), 100 * sd)


def report(runs, before, pairs, steps, args, command, machine, date):
  """The page's Markdown."""
  peers = {"ours": "ours", "st": "sentence-transformers"}
  ours = [r for r in runs["ours"].values() if r]
  theirs = [r for r in runs["st"].values() if r]
  lines = [
      "# Fine-tuning sentence vectors on pairs: ours and sentence-transformers' trainer", "",
      "Made by `%s` on %s: %s (%s), %d cores. all-MiniLM-L6-v2 fine-tuned on %d pairs (MRPC's "
      "training paraphrases and STS-B's training pairs scored 4 or more), batch %d, %g "
      "epoch(s) = %d steps, learning rate %g, %d%% linear warm-up, in-batch negatives "
      "(scale %g), the model's mean pooling, normalisation and 256 tokens; ours with Hugging "
      "Face Trainer's optimizer (`%s`). Scored: Spearman (and Pearson) correlation of cosine "
      "similarity on STS-B's 1,500 dev pairs, x100. Seconds: each whole command (start-up, "
      "training, the dev set's scoring), median over the seeds." % (
          command, date, machine["cpu"], ", ".join(machine["cpu_flags"]), machine["cores"],
          pairs, BATCH, args.epochs, steps, args.learning_rate, int(WARMUP * 100), SCALE,
          " ".join(HF_OPTIMIZER)), "",
      "| | Spearman before | Spearman after: mean ± sd | by seed | Pearson after | "
      "seconds (median) | CPU seconds (median) | other work, CPU s (max) |",
      "|---|---|---|---|---|---|---|---|"]
  for peer, done in (("ours", ours), ("st", theirs)):
    if not done:
      continue
    lines.append("| %s | %.2f | %s | %s | %s | %.0f | %.0f | %.0f |" % (
        peers[peer], 100 * before[peer]["spearman"], mean_sd([r["spearman"] for r in done]),
        " / ".join("%.2f" % (100 * r["spearman"]) for r in done),
        mean_sd([r["pearson"] for r in done]),
        statistics.median(r["seconds"] for r in done),
        statistics.median(r["cpu_seconds"] for r in done),
        max(r["other_cpu_seconds"] or 0 for r in done)))
  if ours and len(theirs) > 1:
    difference = 100 * (statistics.mean(r["spearman"] for r in ours) -
                        statistics.mean(r["spearman"] for r in theirs))
    spread = 100 * statistics.stdev(r["spearman"] for r in theirs)
    lines += ["", "Ours minus sentence-transformers, mean Spearman: %+.2f; its seeds' standard "
              "deviation %.2f: %s. Time, theirs / ours (median whole command): %.2fx." % (
                  difference, spread, "within" if abs(difference) <= spread else "outside",
                  statistics.median(r["seconds"] for r in theirs) /
                  statistics.median(r["seconds"] for r in ours))]
  loaded = [r["loaded_by_sentence_transformers"] for r in ours
            if r.get("loaded_by_sentence_transformers")]
  if loaded:
    lines += ["", "Each of our runs converted to a Hugging Face directory "
              "(`convert_checkpoint.py --output_format=huggingface`) and loaded by "
              "sentence-transformers: its evaluator's Spearman %s (ours: %s); max_seq_length "
              "%s; largest difference of its vectors of the %s dev sentences from embed.py's "
              "of the run: %s." % (
                  " / ".join("%.2f" % (100 * l["spearman"]) for l in loaded),
                  " / ".join("%.2f" % (100 * r["spearman"]) for r in ours
                             if r.get("loaded_by_sentence_transformers")),
                  ", ".join(sorted({str(l["max_seq_length"]) for l in loaded})),
                  "{:,}".format(args.dev_sentences),
                  ", ".join("%.1e" % l["largest_vector_difference"] for l in loaded))]
  return "\n".join(lines) + "\n"


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--seeds", default="1,2,3")
  parser.add_argument("--learning_rate", type=float, default=2e-5)
  parser.add_argument("--epochs", type=float, default=1.0)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--max_pairs", type=int, default=None,
                      help="Train on the first this many pairs (a quick check of the set-up).")
  parser.add_argument("--output_dir", default=OUTPUT)
  parser.add_argument("--page", default=os.path.join(common.REPO_ROOT, "docs", "benchmarks",
                                                     "embedding_pairs"))
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--seed", type=int)
  parser.add_argument("--data_dir")
  parser.add_argument("--model_dir")
  parser.add_argument("--vectors_of")
  args = parser.parse_args()
  if args.worker:
    return worker_st(args)
  model_dir = pretrained.hf_directory()
  if model_dir is None:
    print("embedding_pairs: skipped: " + pretrained.WHERE)
    return
  for name in ("MRPC/train.tsv", "STS-B/train.tsv", "STS-B/dev.tsv"):
    if common.skipped("embedding_pairs", os.path.join(args.glue_dir, name), common.GLUE_WHERE):
      return
  args.output_dir = os.path.join(args.output_dir, "lr%g-epochs%g%s" % (
      args.learning_rate, args.epochs, "-pairs%d" % args.max_pairs if args.max_pairs else ""))
  data_dir = os.path.join(args.output_dir, "data")
  pairs = make_data(args.glue_dir, data_dir, args.max_pairs)
  with open(os.path.join(data_dir, "dev_sentences.txt"), encoding="utf-8") as f:
    args.dev_sentences = sum(1 for _ in f)
  checkpoint_dir = pretrained.imported(os.path.join(OUTPUT, "checkpoint"))
  before = {peer: run_one(args, peer, None, data_dir, checkpoint_dir, model_dir)
            for peer in ("ours", "st")}
  runs = {"ours": {}, "st": {}}
  for n, seed in enumerate(int(s) for s in args.seeds.split(",")):
    for peer in (("ours", "st") if n % 2 == 0 else ("st", "ours")):
      runs[peer][seed] = run_one(args, peer, seed, data_dir, checkpoint_dir, model_dir)
  steps = int(pairs / BATCH * args.epochs)
  machine, date = common.machine(), datetime.date.today().isoformat()
  command = "flock /tmp/bench.lock python -m bench.bench_embedding_pairs --seeds=%s " \
            "--learning_rate=%g --epochs=%g%s" % (
                args.seeds, args.learning_rate, args.epochs,
                " --max_pairs=%d" % args.max_pairs if args.max_pairs else "")
  text = report(runs, before, pairs, steps, args, command, machine, date)
  print("\n" + text)
  common.write_text(args.page + ".md", text)
  common.write_text(args.page + ".json", json.dumps(
      {"command": command, "date": date, "machine": machine, "pairs": pairs, "steps": steps,
       "batch": BATCH, "epochs": args.epochs, "learning_rate": args.learning_rate,
       "warmup_proportion": WARMUP, "scale": SCALE, "ours_optimizer_flags": HF_OPTIMIZER,
       "before": before, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
  main()
