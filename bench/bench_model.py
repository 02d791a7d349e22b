"""Pre-training, fine-tuning and inference time: ours vs the peers, side by side.

  python -m bench.bench_model --original_dir=/path/to/google-research/bert \\
      [--sizes=tiny,mini,small,base] [--classify_sizes=base] [--steps=5]

Pre-training step (`--sizes`): masked LM + next sentence, batch 8, sequence
128, 20 predictions, AdamW. Fine-tuning step (`--classify_sizes`, "" for
none): run_classifier.py's 2-label sentence-pair classifier, batch
`--classify_batch` (32), sequence 128, dropout 0.1, mean cross-entropy, AdamW
with global-norm clipping 1.0; reported as seconds per step and examples per
second. SQuAD fine-tuning step (`--squad_sizes`, default BERT-Base, batch
`--squad_batch` (8), sequence 384): run_squad.py's span model and loss (the
mean of the start and end cross-entropies), the same optimizer; peers
original (run_squad.create_model), hf (BertForQuestionAnswering), tf_models
(BertSpanLabeler). Inference (unless --skip_inference): BERT-Base encoder, batch 1 and
32, sequence 128. So `--sizes= --skip_inference` runs the fine-tuning steps
alone. Every configuration runs in its own process (TensorFlow graph mode,
eager mode and PyTorch do not share one well) and reports the median time of
`--steps` steps after warm-up (with `--repeats=N`, the best of N interleaved
rounds). Peers:
  original   google-research/bert under tf.compat.v1 (needs tf_keras); for
             fine-tuning its run_classifier.create_model + create_optimizer;
  hf         Hugging Face transformers on PyTorch (CPU): BertForPreTraining,
             BertForSequenceClassification; torch AdamW, clip_grad_norm_;
  keras_hub  keras-hub BertMaskedLM (masked LM only: it has no NSP head),
             BertTextClassifier; compile + train_on_batch;
  tf_models  tf-models-official BertEncoderV2 + BertPretrainerV2 (masked LM +
             next sentence) or BertClassifier, its AdamWeightDecay (which
             clips to norm 1.0); its NSP head reads [CLS] itself, so the
             pooler is idle;
  ours       modeling.BertPretrainer: f32, xla (f32 + XLA), bf16
             (mixed_bfloat16), bf16xla (mixed_bfloat16 + XLA); loop and
             loopxla time run_pretraining's training loop itself. Fine-tuning
             always times run_classifier's loop (modeling/training.py) on
             modeling.BertClassifier, as f32, xla and bf16.
"""

import argparse
import ast
import os
import statistics
import sys
import time

from bench import common
from bench import environments

import numpy as np  # pylint: disable=g-import-not-at-top

SIZES = {  # layers, hidden, heads (intermediate = 4 * hidden), as released.
    "tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8),
    "base": (12, 768, 12)}
VOCAB = 30522
SEQ = 128
SQUAD_SEQ = 384
PREDICTIONS = 20
# Learning rates (they do not change the time): pre-training from scratch as
# the paper, fine-tuning as the original README's MRPC example.
LEARNING_RATE = {"train": 1e-4, "classify": 2e-5, "squad": 3e-5}
# Ours in fine-tuning: each runs run_classifier's / run_squad's loop (so
# loop/loopxla would repeat f32/xla).
CLASSIFY_OURS = ("f32", "xla", "bf16")


def config_dict(size):
  layers, hidden, heads = SIZES[size]
  return dict(vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
              num_attention_heads=heads, intermediate_size=4 * hidden,
              hidden_act="gelu", hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, max_position_embeddings=512,
              type_vocab_size=2, initializer_range=0.02)


def batch(size, mode="train", seed=0):
  """Random features of `mode` (the classifier's are the first three + labels,
  SQuAD's the first three + answer positions in the second segment)."""
  rng = np.random.RandomState(seed)
  seq = SQUAD_SEQ if mode == "squad" else SEQ
  ids = rng.randint(1000, VOCAB, size=(size, seq)).astype(np.int32)
  first_segment = seq // 8 if mode == "squad" else seq // 2  # Question, or sentence A.
  features = {"input_ids": ids, "input_mask": np.ones_like(ids),
              "segment_ids": (np.arange(seq) >= first_segment).astype(np.int32)[None].repeat(
                  size, 0)}
  if mode == "classify":
    return dict(features, label_ids=rng.randint(0, 2, size=(size,)).astype(np.int32))
  if mode == "squad":
    start = rng.randint(seq // 8, seq - 30, size=(size,)).astype(np.int32)
    end = start + rng.randint(0, 30, size=(size,)).astype(np.int32)
    return dict(features, start_positions=start, end_positions=end)
  positions = np.sort(np.stack([rng.choice(np.arange(1, SEQ), PREDICTIONS, replace=False)
                                for _ in range(size)]), axis=1).astype(np.int32)
  return {**features, "masked_lm_positions": positions,
          "masked_lm_ids": rng.randint(1000, VOCAB, size=(size, PREDICTIONS)).astype(np.int32),
          "masked_lm_weights": np.ones((size, PREDICTIONS), np.float32),
          "next_sentence_labels": rng.randint(0, 2, size=(size, 1)).astype(np.int32)}


def timed(step, warmup_steps, steps):
  for _ in range(warmup_steps):
    step()
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


# ---------------------------------------------------------------- workers


def inference_steps(args):
  """Small batches are fast and noisy here: time more of them."""
  return args.steps * 6 if args.batch == 1 else args.steps


def warmup(args, default):
  """Steps run before timing: `--warmup`, else the worker's default."""
  return default if args.warmup is None else args.warmup


def step_count(args):
  return inference_steps(args) if args.mode == "infer" else args.steps


def run_ours(args, data):
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from modeling import optimization  # pylint: disable=g-import-not-at-top
  from bench import train_step  # pylint: disable=g-import-not-at-top
  if args.variant.startswith("bf16"):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
  jit = args.variant.endswith("xla")
  config = modeling.BertConfig.from_dict(config_dict(args.size))
  features = {k: tf.constant(v) for k, v in data.items()}
  if args.mode == "classify":
    return _time_training_loop(args, lambda: modeling.BertClassifier(config, num_labels=2),
                               data, jit)
  if args.mode == "squad":
    return _time_training_loop(args, lambda: modeling.BertSpanPredictor(config),
                               data, jit)
  if args.mode == "train" and args.variant.startswith("loop"):
    return _time_training_loop(args, lambda: modeling.BertPretrainer(config),
                               data, jit)
  if args.mode == "train":
    model = modeling.BertPretrainer(config)
    step = train_step.make_train_step(
        model, optimization.create_optimizer(1e-4, 10000, 100), jit_compile=jit)
    return timed(lambda: float(step(features)), warmup(args, 2), args.steps)
  model = modeling.BertModel(config, validate_inputs=False)
  inputs = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
  forward = tf.function(lambda x: model(x, training=False)["sequence_output"],
                        jit_compile=jit)
  return timed(lambda: forward(inputs).numpy(), warmup(args, 3), inference_steps(args))


def _time_training_loop(args, make_model, data, jit):
  """Seconds per step of the run_*.py scripts' driver (modeling/training.py),
  which is what run_pretraining and run_classifier actually spend."""
  import tempfile  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from modeling import losses, optimization, training  # pylint: disable=g-import-not-at-top
  from modeling import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
  strategy = strategy_lib.create_strategy("one_device")
  with strategy.scope():
    model = make_model()
    optimizer = optimization.create_optimizer(LEARNING_RATE[args.mode], 10000, 100)
  dataset_fn = lambda batch, ctx: tf.data.Dataset.from_tensors(data).repeat()
  # Two loops of `steps` steps: the first compiles, the second is timed. The
  # final checkpoint (1.3 GB at BERT-Base) goes to a directory removed after.
  with tempfile.TemporaryDirectory() as output_dir:
    settings = training.TrainingSettings(
        output_dir=output_dir, num_train_steps=2 * args.steps, train_batch_size=args.batch,
        save_checkpoints_steps=10 ** 9, iterations_per_loop=args.steps, use_xla=jit)
    result = training.train(strategy, model, losses.ModelLoss(model), dataset_fn, settings,
                            optimizer=optimizer)
  return args.batch / result.examples_per_second


def original_modules(args):
  """tf.compat.v1 and the original's modeling and optimization modules (from a
  temporary copy, see common.original_code_dir), patched to run on TF2."""
  os.environ["TF_USE_LEGACY_KERAS"] = "1"
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  tf.disable_v2_behavior()
  code_dir = common.original_code_dir(args.original_dir)
  modeling, optimization = common.import_original(code_dir, "modeling", "optimization")

  def layer_norm(x, name=None):  # tf.contrib.layers.layer_norm, which TF2 lacks
    with tf.variable_scope(name, default_name="LayerNorm"):
      beta = tf.get_variable("beta", [x.shape[-1]], initializer=tf.zeros_initializer())
      gamma = tf.get_variable("gamma", [x.shape[-1]], initializer=tf.ones_initializer())
      mean, var = tf.nn.moments(x, [-1], keep_dims=True)
      return tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-12)
  modeling.layer_norm = layer_norm
  return tf, modeling, optimization, code_dir


def original_functions(args, script, names, namespace):
  """Top-level functions and classes `names` of one of the original's
  scripts, executed in `namespace` (importing the script would define its
  tf.flags)."""
  source = os.path.join(args.original_dir, script)
  with open(source, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  body = [n for n in tree.body
          if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
  exec(compile(ast.Module(body, []), source, "exec"), namespace)  # pylint: disable=exec-used
  return namespace


def run_original(args, data):
  tf, modeling, optimization, code_dir = original_modules(args)
  config = modeling.BertConfig.from_dict(config_dict(args.size))
  t = {k: tf.constant(v) for k, v in data.items()}
  if args.mode == "classify":
    create_model = original_functions(args, "run_classifier.py", {"create_model"},
                                       {"tf": tf, "modeling": modeling})["create_model"]
    loss = create_model(config, True, t["input_ids"], t["input_mask"], t["segment_ids"],
                        t["label_ids"], num_labels=2, use_one_hot_embeddings=False)[0]
    target = optimization.create_optimizer(loss, LEARNING_RATE["classify"], 10000, 100, False)
  elif args.mode == "squad":
    create_model = original_functions(args, "run_squad.py", {"create_model"},
                                       {"tf": tf, "modeling": modeling})["create_model"]
    start_logits, end_logits = create_model(config, True, t["input_ids"], t["input_mask"],
                                            t["segment_ids"], use_one_hot_embeddings=False)

    def span_loss(logits, positions):  # As the original's model_fn computes it.
      one_hot = tf.one_hot(positions, depth=SQUAD_SEQ, dtype=tf.float32)
      return -tf.reduce_mean(tf.reduce_sum(one_hot * tf.nn.log_softmax(logits, axis=-1), -1))
    loss = (span_loss(start_logits, t["start_positions"]) +
            span_loss(end_logits, t["end_positions"])) / 2.0
    target = optimization.create_optimizer(loss, LEARNING_RATE["squad"], 10000, 100, False)
  else:
    model = modeling.BertModel(config=config, is_training=args.mode == "train",
                               input_ids=t["input_ids"], input_mask=t["input_mask"],
                               token_type_ids=t["segment_ids"], use_one_hot_embeddings=False)
    target = model.get_sequence_output()
    if args.mode == "train":
      heads = original_functions(
          args, "run_pretraining.py",
          {"get_masked_lm_output", "get_next_sentence_output", "gather_indexes"},
          {"tf": tf, "modeling": modeling})
      mlm = heads["get_masked_lm_output"](config, model.get_sequence_output(),
                                          model.get_embedding_table(), t["masked_lm_positions"],
                                          t["masked_lm_ids"], t["masked_lm_weights"])
      nsp = heads["get_next_sentence_output"](config, model.get_pooled_output(),
                                              t["next_sentence_labels"])
      target = optimization.create_optimizer(mlm[0] + nsp[0], LEARNING_RATE["train"],
                                             10000, 100, False)
  sess = tf.Session()
  sess.run(tf.global_variables_initializer())
  result = timed(lambda: sess.run(target), warmup(args, 2), step_count(args))
  common.cleanup(code_dir)
  return result


def run_hf(args, data):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  c = config_dict(args.size)
  config = transformers.BertConfig(
      vocab_size=VOCAB, hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
      num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
      hidden_act="gelu_new", max_position_embeddings=512, type_vocab_size=2, num_labels=2)
  t = {k: torch.from_numpy(v).long() for k, v in data.items() if v.dtype != np.float32}
  inputs = dict(input_ids=t["input_ids"], attention_mask=t["input_mask"],
                token_type_ids=t["segment_ids"])
  if args.mode == "infer":
    model = transformers.BertModel(config).eval()

    def forward():
      with torch.no_grad():
        model(**inputs)
    return timed(forward, warmup(args, 3), inference_steps(args))
  if args.mode == "train":
    model = transformers.BertForPreTraining(config)
    labels = torch.full_like(t["input_ids"], -100)
    labels.scatter_(1, t["masked_lm_positions"], t["masked_lm_ids"])
    inputs.update(labels=labels, next_sentence_label=t["next_sentence_labels"][:, 0])
  elif args.mode == "squad":
    model = transformers.BertForQuestionAnswering(config)
    inputs.update(start_positions=t["start_positions"], end_positions=t["end_positions"])
  else:
    model = transformers.BertForSequenceClassification(config)
    inputs.update(labels=t["label_ids"])
  model.train()
  optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE[args.mode],
                                weight_decay=0.01)

  def step():
    optimizer.zero_grad()
    model(**inputs).loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
  return timed(step, warmup(args, 2), args.steps)


def run_keras_hub(args, data):
  import keras  # pylint: disable=g-import-not-at-top
  import keras_hub  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  c = config_dict(args.size)
  backbone = keras_hub.models.BertBackbone(
      vocabulary_size=VOCAB, num_layers=c["num_hidden_layers"],
      num_heads=c["num_attention_heads"], hidden_dim=c["hidden_size"],
      intermediate_dim=c["intermediate_size"], max_sequence_length=512)
  x = {"token_ids": data["input_ids"], "padding_mask": data["input_mask"],
       "segment_ids": data["segment_ids"]}
  jit = args.variant == "xla"
  if args.mode == "infer":
    forward = tf.function(lambda inputs: backbone(inputs)["sequence_output"], jit_compile=jit)
    tensors = {k: tf.constant(v) for k, v in x.items()}
    return timed(lambda: forward(tensors).numpy(), warmup(args, 3), inference_steps(args))
  if args.mode == "train":
    model = keras_hub.models.BertMaskedLM(backbone=backbone)
    x = dict(x, mask_positions=data["masked_lm_positions"])
    y = data["masked_lm_ids"]
    w = data["masked_lm_weights"]
  else:
    model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)
    y = data["label_ids"]
    w = None
  # No metrics: the step alone, as every other peer times it.
  model.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE[args.mode], weight_decay=0.01,
                                                 global_clipnorm=1.0),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=[], weighted_metrics=[], jit_compile=jit)
  return timed(lambda: model.train_on_batch(x, y, sample_weight=w), warmup(args, 2), args.steps)


def run_tf_models(args, data):
  """tf-models-official (Model Garden): BertEncoderV2 + BertPretrainerV2 or
  BertClassifier."""
  os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Model Garden is built on tf_keras
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.nlp import optimization  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import layers, models, networks  # pylint: disable=g-import-not-at-top
  c = config_dict(args.size)
  encoder = networks.BertEncoderV2(
      vocab_size=VOCAB, hidden_size=c["hidden_size"], num_layers=c["num_hidden_layers"],
      num_attention_heads=c["num_attention_heads"], inner_dim=c["intermediate_size"],
      max_sequence_length=512, type_vocab_size=2)
  x = {"input_word_ids": tf.constant(data["input_ids"]),
       "input_mask": tf.constant(data["input_mask"]),
       "input_type_ids": tf.constant(data["segment_ids"])}
  jit = args.variant == "xla"
  if args.mode == "infer":
    forward = tf.function(lambda inputs: encoder(inputs)["sequence_output"], jit_compile=jit)
    return timed(lambda: forward(x).numpy(), warmup(args, 3), inference_steps(args))
  xent = tf.nn.sparse_softmax_cross_entropy_with_logits
  if args.mode == "train":
    model = models.BertPretrainerV2(encoder, classification_heads=[
        layers.ClassificationHead(c["hidden_size"], 2, name="next_sentence")])
    x = dict(x, masked_lm_positions=tf.constant(data["masked_lm_positions"]))
    mlm_ids = tf.constant(data["masked_lm_ids"])
    mlm_weights = tf.constant(data["masked_lm_weights"])
    nsp_labels = tf.constant(data["next_sentence_labels"][:, 0])

    def loss_of(out):
      mlm = tf.reduce_sum(xent(mlm_ids, out["mlm_logits"]) * mlm_weights) / (
          tf.reduce_sum(mlm_weights) + 1e-5)
      return mlm + tf.reduce_mean(xent(nsp_labels, out["next_sentence"]))
  elif args.mode == "squad":
    model = models.BertSpanLabeler(encoder)
    starts = tf.constant(data["start_positions"])
    ends = tf.constant(data["end_positions"])

    def loss_of(out):
      if isinstance(out, dict):
        out = (out["start_logits"], out["end_logits"])
      return (tf.reduce_mean(xent(starts, out[0])) + tf.reduce_mean(xent(ends, out[1]))) / 2.0
  else:
    model = models.BertClassifier(encoder, num_classes=2)
    labels = tf.constant(data["label_ids"])
    loss_of = lambda logits: tf.reduce_mean(xent(labels, logits))
  optimizer = optimization.create_optimizer(LEARNING_RATE[args.mode], 10000, 100)

  @tf.function(jit_compile=jit)
  def step():
    with tf.GradientTape() as tape:
      loss = loss_of(model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
  return timed(lambda: float(step()), warmup(args, 2), args.steps)


WORKERS = {"ours": run_ours, "original": run_original, "hf": run_hf,
           "keras_hub": run_keras_hub, "tf_models": run_tf_models}


def worker(args):
  data = batch(args.batch, args.mode)
  seconds = WORKERS[args.peer](args, data)
  common.report_result({"seconds": seconds})


# ---------------------------------------------------------------- driver


def measure(args, peer, variant, size, mode, batch_size):
  cmd = [environments.interpreter(peer), "-m", "bench.bench_model", "--worker", "--peer=" + peer,
         "--variant=" + variant, "--size=" + size, "--mode=" + mode,
         "--batch=%d" % batch_size, "--steps=%d" % args.steps]
  result = common.run_worker(cmd, "%s/%s/%s/%s" % (peer, variant, size, mode),
                             args.original_dir)
  return result and result["seconds"]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--original_dir", default=os.environ.get("BERT_ORIGINAL_DIR"))
  parser.add_argument("--sizes", default="tiny,mini,small,base")
  parser.add_argument("--steps", type=int, default=5)
  parser.add_argument("--peers", default="original,hf,keras_hub,keras_hub/xla,tf_models,tf_models/xla,ours,ours/xla,ours/bf16,ours/bf16xla")
  parser.add_argument("--classify_sizes", default="base",
                      help="Sizes of the fine-tuning step; empty for none.")
  parser.add_argument("--classify_batch", type=int, default=32)
  parser.add_argument("--squad_sizes", default="base",
                      help="Sizes of the SQuAD fine-tuning step; empty for none.")
  parser.add_argument("--squad_batch", type=int, default=8)
  parser.add_argument("--skip_inference", action="store_true")
  parser.add_argument("--repeats", type=int, default=1,
                      help="Interleaved rounds per configuration; the best is kept.")
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--peer")
  parser.add_argument("--variant", default="f32")
  parser.add_argument("--size", default="base")
  parser.add_argument("--mode", default="train")
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--warmup", type=int, default=None)
  args = parser.parse_args()
  if args.worker:
    return worker(args)

  peers = [p.split("/") + ["f32"] if "/" not in p else p.split("/")
           for p in args.peers.split(",")]
  peers = [(p[0], p[1]) for p in peers]
  if not args.original_dir:
    peers = [p for p in peers if p[0] != "original"]
  jobs = [("train", size, 8) for size in args.sizes.split(",") if size]  # --sizes= : none
  jobs += [("classify", size, args.classify_batch)
           for size in args.classify_sizes.split(",") if size]
  jobs += [("squad", size, args.squad_batch) for size in args.squad_sizes.split(",") if size]
  if not args.skip_inference:
    jobs += [("infer", "base", 1), ("infer", "base", 32)]
  for mode, size, batch_size in jobs:
    results = {}
    # Rounds interleave the peers, and each keeps its best round: this
    # machine's background noise (often +-10%) hits some rounds, not all.
    for _ in range(args.repeats):
      for peer, variant in peers:
        if mode in ("classify", "squad") and peer == "ours" and variant not in CLASSIFY_OURS:
          continue
        if mode == "squad" and peer == "keras_hub":
          continue  # keras-hub has no span (SQuAD) task model.
        name = "%s/%s" % (peer, variant)
        seconds = measure(args, peer, variant, size, mode, batch_size)
        if seconds is not None:
          results[name] = min(seconds, results.get(name) or seconds)
        else:
          results.setdefault(name, None)
    base = results.get("original/f32")
    # Every peer runs in float32 (with or without XLA).
    peer_times = [v for k, v in results.items() if v and not k.startswith("ours")]
    best_peer = min(peer_times) if peer_times else None
    rates = mode in ("classify", "squad")  # Fine-tuning is also read as examples/s.
    print("\n%s %s batch %d (seconds per step%s; speed-up = original / this)" %
          (mode, size, batch_size, ", examples per second" if rates else ""))
    for name, seconds in results.items():
      if seconds is None:
        print("  %-16s failed" % name)
        continue
      rate = " %8.2f ex/s" % (batch_size / seconds) if rates else ""
      ratio = " %5.2fx original" % (base / seconds) if base else ""
      vs_best = " %5.2fx fastest peer" % (best_peer / seconds) if best_peer else ""
      print("  %-16s %8.4f s%s%s%s" % (name, seconds, rate, ratio, vs_best))
    sys.stdout.flush()


if __name__ == "__main__":
  main()
