"""Static masks (the original) against dynamic masking, the same pre-training
run otherwise: masked-LM accuracy and loss after the same steps, on held-out
records, and what masking on the fly costs in time.

  python bench/bench_dynamic_masking.py [--steps=2000] [--seeds=1]

The demo's setting (`make demo`): the bundled corpus (King James Bible, a
document per chapter), its learned 8,000-token vocabulary, sequences of 64,
10 predictions, dupe_factor 5, a 2-layer hidden-128 BERT without dropout,
batch 32, learning rate 5e-4, 100 warm-up steps. The last 10% of the
chapters are held out: both models are evaluated on records made from them
(one pass, their static masks), which neither saw in training.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # pylint: disable=g-import-not-at-top,wrong-import-position

SEQ, PREDICTIONS = 64, 10


def run(args, label):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  start = time.perf_counter()
  result = subprocess.run([sys.executable] + args, cwd=common.REPO_ROOT, capture_output=True,
                          text=True, env=env)
  if result.returncode:
    sys.exit("%s failed:\n%s" % (label, result.stderr[-3000:]))
  return time.perf_counter() - start


def split_corpus(path, train_path, heldout_path, heldout_share=0.1):
  with open(path, encoding="utf-8") as f:
    documents = [d for d in f.read().split("\n\n") if d.strip()]
  cut = int(len(documents) * (1 - heldout_share))
  for target, part in ((train_path, documents[:cut]), (heldout_path, documents[cut:])):
    with open(target, "w", encoding="utf-8") as f:
      f.write("\n\n".join(part) + "\n")
  return cut, len(documents) - cut


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--seeds", type=int, default=1, help="Runs per way, seeds 0..N-1.")
  parser.add_argument("--output", default=os.path.join(common.REPO_ROOT, "bench", "output",
                                                       "dynamic_masking.json"))
  args = parser.parse_args()
  results = {"static": [], "dynamic": []}
  with tempfile.TemporaryDirectory() as scratch:
    path = lambda name: os.path.join(scratch, name)  # noqa: E731
    run(["-m", "demo.corpus", "--output_file=" + path("corpus.txt")], "demo.corpus")
    train_docs, heldout_docs = split_corpus(path("corpus.txt"), path("train.txt"),
                                            path("heldout.txt"))
    run(["-m", "vocab.learn_vocab", "--input_file=" + path("train.txt"),
         "--output_file=" + path("vocab.txt"), "--vocab_size=8000"], "learn_vocab")
    for name, dupe in (("train", 5), ("heldout", 1)):
      run(["-m", "data_prep.create_pretraining_data", "--input_file=" + path(name + ".txt"),
           "--output_file=" + path(name + ".tfrecord"), "--vocab_file=" + path("vocab.txt"),
           "--max_seq_length=%d" % SEQ, "--max_predictions_per_seq=%d" % PREDICTIONS,
           "--dupe_factor=%d" % dupe, "--random_seed=%d" % (12345 + (name == "heldout"))],
          "create_pretraining_data")
    with open(path("vocab.txt"), encoding="utf-8") as f:
      vocab_size = sum(1 for _ in f)
    with open(path("config.json"), "w") as f:
      json.dump(dict(vocab_size=vocab_size, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=512, hidden_act="gelu",
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     max_position_embeddings=512, type_vocab_size=2,
                     initializer_range=0.02), f)
    common_flags = ["--bert_config_file=" + path("config.json"), "--max_seq_length=%d" % SEQ,
                    "--max_predictions_per_seq=%d" % PREDICTIONS]
    for seed in range(args.seeds):
      for way in ("static", "dynamic"):  # Taking turns: slow spells hit both alike.
        out = path("%s_%d" % (way, seed))
        seconds = run(["run_pretraining.py", "--input_file=" + path("train.tfrecord"),
                       "--output_dir=" + out, "--do_train", "--train_batch_size=32",
                       "--num_train_steps=%d" % args.steps, "--num_warmup_steps=100",
                       "--learning_rate=5e-4", "--save_checkpoints_steps=%d" % args.steps,
                       "--iterations_per_loop=100", "--seed=%d" % seed] + common_flags + (
                           ["--dynamic_masking", "--vocab_file=" + path("vocab.txt")]
                           if way == "dynamic" else []), way)
        run(["run_pretraining.py", "--input_file=" + path("heldout.tfrecord"),
             "--output_dir=" + out, "--do_eval", "--eval_one_pass", "--eval_batch_size=32"]
            + common_flags, way + " eval")
        with open(os.path.join(out, "eval_results.txt")) as f:
          values = {k: float(v) for k, v in (l.strip().split(" = ") for l in f)}
        results[way].append(dict(values, train_seconds=seconds, seed=seed))
        print("%-7s seed %d: held-out masked-LM accuracy %.4f, loss %.4f; next-sentence "
              "accuracy %.4f; training %.1f s" % (
                  way, seed, values["masked_lm_accuracy"], values["masked_lm_loss"],
                  values["next_sentence_accuracy"], seconds), flush=True)
  mean = lambda way, key: sum(r[key] for r in results[way]) / len(results[way])  # noqa: E731
  print("\n%d steps, %d training / %d held-out chapters, mean of %d seed(s):" % (
      args.steps, train_docs, heldout_docs, args.seeds))
  for way in ("static", "dynamic"):
    print("  %-7s masked-LM accuracy %.4f  loss %.4f  training %.1f s" % (
        way, mean(way, "masked_lm_accuracy"), mean(way, "masked_lm_loss"),
        mean(way, "train_seconds")))
  print("  dynamic / static training time: %.2fx" % (
      mean("dynamic", "train_seconds") / mean("static", "train_seconds")))
  common.write_text(args.output, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
  main()
