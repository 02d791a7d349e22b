"""A real Hugging Face checkpoint in and out, checked against transformers
itself on real text.

  python -m bench.bench_hf_checkpoint [--texts=300] [--glue_dir=../shared/data/glue]
    [--conll_dir=../shared/data/conll2003] [--ner_sentences=600]

1. In: all-MiniLM-L6-v2 (bench/pretrained.py) imported by
   bert-convert-checkpoint; its encoder run by ours and by transformers'
   BertModel on the first --texts sentence pairs of GLUE's MRPC dev set:
   the token ids each side's tokenizer gives, and the largest difference of
   the last layer (real tokens) and the pooled output.
2. Out: ours fine-tunes it briefly on MRPC (run_classifier.py, the first
   --train_rows rows, one epoch), bert-convert-checkpoint writes the result
   as a Hugging Face directory, transformers loads it
   (BertForSequenceClassification: missing and unexpected weights listed)
   and its logits on the same pairs are compared with ours
   (run_classifier.py --do_predict's test_results.tsv, as probabilities, and
   the model's logits).
3. Training: from the imported weights, dropout off, the same classifier
   weights and the same batches of those pairs with their labels, STEPS
   steps by ours with Hugging Face Trainer's defaults (HF_RECIPE, as
   run_classifier.py's flags) and by transformers' model with PyTorch's
   AdamW, clip_grad_norm_ and get_linear_schedule_with_warmup, as the
   Trainer steps: the largest difference of the losses along the way and
   of the final logits.
4. A tagger out: ours fine-tunes it briefly on CoNLL-2003 (run_ner.py, the
   first --ner_sentences training sentences, one epoch) and tags the first
   --ner_sentences dev sentences; bert-convert-checkpoint writes it back with
   no label or casing flag (the run's labels.txt and tokenizer_config.json
   give them); transformers loads it as BertForTokenClassification with its
   own tokenizer and tags the same words (each word by its first piece): how
   many words and sentences get the same tag from both.
5. A multi-label classifier out: the entity types of a CoNLL-2003 sentence
   as its labels (e.g. `LOC;PER`; none for a sentence without entities);
   ours fine-tunes it briefly on the first --ner_sentences training
   sentences (run_multi_label.py, one epoch) and predicts the same number of
   dev sentences; bert-convert-checkpoint writes it back with no flag;
   transformers loads it as BertForSequenceClassification, its config's
   problem_type and labels are read, and its sigmoid probabilities on the
   same texts, by its own tokenizer, are compared with ours
   (test_results.tsv).
Prints the figures and writes bench/output/hf_checkpoint.json. Not a timed
benchmark: what a user bringing a checkpoint needs to be true.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

from bench import common
from bench import environments
from bench import pretrained

SEQ = 128
STEPS, STEP_BATCH, WARMUP_STEPS, SCHEDULE_STEPS = 6, 16, 2, 10
# run_classifier.py's flags that make Hugging Face Trainer's defaults, as
# TrainingSettings fields (the shuffle, --train_shuffle_buffer=0, aside).
HF_RECIPE = dict(weight_decay_rate=0.0, adam_bias_correction=True, adam_epsilon=1e-8,
                 decay_after_warmup=True, clip_dense_norm=True)


def mrpc_rows(path, count):
  with open(path, encoding="utf-8-sig") as f:
    return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:count + 1]


def mrpc_pairs(path, count):
  return [(r[3], r[4]) for r in mrpc_rows(path, count)]


def worker_ours(args):
  """Our tokenizer and model on the pairs: ids and outputs in an .npz."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from data_prep import tokenization  # pylint: disable=g-import-not-at-top
  from tasks.classification import features  # pylint: disable=g-import-not-at-top
  pairs = mrpc_pairs(args.pairs_file, args.texts)
  tokenizer = tokenization.FullTokenizer(os.path.join(args.checkpoint_dir, "vocab.txt"), True)
  examples = [features.InputExample("dev-%d" % i, a, b, "0") for i, (a, b) in enumerate(pairs)]
  converted = [features.convert_single_example(i, e, ["0", "1"], SEQ, tokenizer)
               for i, e in enumerate(examples)]
  inputs = {name: np.array([getattr(f, name) for f in converted], np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}
  config = modeling.BertConfig.from_json_file(os.path.join(args.checkpoint_dir,
                                                           "bert_config.json"))
  model = modeling.BertModel(config)
  modeling.load_checkpoint(model, os.path.join(args.checkpoint_dir, "bert_model.ckpt"),
                           log=False)
  outputs = model(inputs, training=False)
  result = dict(inputs, sequence_output=outputs["sequence_output"].numpy(),
                pooled_output=outputs["pooled_output"].numpy())
  if args.classifier_dir:  # The fine-tuned classifier's logits too.
    classifier = modeling.BertClassifier(config, num_labels=2)
    modeling.load_checkpoint(classifier, args.classifier_dir, log=False)
    result["logits"] = classifier(inputs, training=False)["logits"].numpy()
  np.savez(args.output, **result)
  common.report_result({})


def step_batches(inputs, labels):
  """The training check's batches: STEP_BATCH pairs each, in turn."""
  count = len(labels) // STEP_BATCH
  return [dict({k: v[i * STEP_BATCH:(i + 1) * STEP_BATCH] for k, v in inputs.items()},
               label_ids=labels[i * STEP_BATCH:(i + 1) * STEP_BATCH])
          for i in range(count)]


def worker_ours_steps(args):
  """STEPS training steps by ours (HF_RECIPE, dropout off) from the imported
  weights: the batches, classifier weights, losses and final logits."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from modeling.blocks import layers  # pylint: disable=g-import-not-at-top
  from modeling import losses  # pylint: disable=g-import-not-at-top
  from modeling import training  # pylint: disable=g-import-not-at-top
  ours = np.load(args.ours_output)
  inputs = {k: ours[k] for k in ("input_ids", "input_mask", "segment_ids")}
  labels = np.array([int(r[0]) for r in mrpc_rows(args.pairs_file, args.texts)], np.int32)
  batches = step_batches(inputs, labels)
  config = modeling.BertConfig.from_json_file(os.path.join(args.checkpoint_dir,
                                                           "bert_config.json"))
  config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
  model = modeling.BertClassifier(config, num_labels=2)
  model({k: tf.constant(v) for k, v in batches[0].items()})
  modeling.load_checkpoint(model, os.path.join(args.checkpoint_dir, "bert_model.ckpt"),
                           log=False)
  for layer in model._flatten_layers():  # pylint: disable=protected-access
    if isinstance(layer, layers.Dropout):
      layer.rate = 0.0  # The classifier head's own dropout too.
  weights = model.original_names()
  classifier = (np.random.RandomState(0).randn(2, config.hidden_size) * 0.02).astype(np.float32)
  weights["output_weights"].assign(classifier)
  weights["output_bias"].assign(np.zeros(2, np.float32))
  optimizer = training.create_optimizer(training.TrainingSettings(
      output_dir=args.output, num_train_steps=SCHEDULE_STEPS, num_warmup_steps=WARMUP_STEPS,
      train_batch_size=STEP_BATCH, learning_rate=5e-5, **HF_RECIPE))
  loss_fn, step_losses = losses.ModelLoss(model), []
  for step in range(STEPS):
    features = {k: tf.constant(v) for k, v in batches[step % len(batches)].items()}
    with tf.GradientTape() as tape:
      loss = loss_fn(model, features, loss_fn.totals(features))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    step_losses.append(float(loss))
  logits = model({k: tf.constant(v) for k, v in batches[0].items()}, training=False)["logits"]
  np.savez(args.output, labels=labels, classifier=classifier, losses=np.array(step_losses),
           logits=logits.numpy(), **inputs)
  common.report_result({})


def worker_hf_steps(args):
  """The same steps by transformers and PyTorch, as the Trainer takes them."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  ours = np.load(args.ours_output)
  inputs = {"input_ids": ours["input_ids"], "attention_mask": ours["input_mask"],
            "token_type_ids": ours["segment_ids"]}
  batches = step_batches(inputs, ours["labels"])
  model = transformers.BertForSequenceClassification.from_pretrained(
      args.model_dir, num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  with torch.no_grad():
    model.classifier.weight.copy_(torch.tensor(ours["classifier"]))
    model.classifier.bias.zero_()
  model.train()
  optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, eps=1e-8, weight_decay=0.0)
  schedule = transformers.get_linear_schedule_with_warmup(optimizer, WARMUP_STEPS,
                                                          SCHEDULE_STEPS)

  def tensors(batch):
    return {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}

  step_losses = []
  for step in range(STEPS):
    batch = tensors(batches[step % len(batches)])
    loss = model(**{k: v for k, v in batch.items() if k != "label_ids"},
                 labels=batch["label_ids"]).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    step_losses.append(loss.item())
  model.eval()
  with torch.inference_mode():
    first = tensors(batches[0])
    logits = model(**{k: v for k, v in first.items() if k != "label_ids"}).logits.numpy()
  common.report_result({
      "steps": STEPS, "step_loss_max_diff": float(np.abs(np.array(step_losses) -
                                                          ours["losses"]).max()),
      "step_logits_max_diff": float(np.abs(logits - ours["logits"]).max()),
      "step_logits_max": float(np.abs(logits).max())})


def worker_hf(args):
  """transformers on the same pairs: its tokenizer's ids, BertModel's
  outputs on our ids, and the exported classifier's logits and load report."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  ours = np.load(args.ours_output)
  pairs = mrpc_pairs(args.pairs_file, args.texts)
  tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
  encoded = tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                      max_length=SEQ, padding="max_length", return_tensors="np")
  inputs = {"input_ids": torch.tensor(ours["input_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(ours["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(ours["segment_ids"], dtype=torch.long)}
  result = {"same_ids": int((encoded["input_ids"] == ours["input_ids"]).all(1).sum()),
            "texts": len(pairs)}
  with torch.inference_mode():
    model = transformers.BertModel.from_pretrained(args.model_dir).eval()
    out = model(**inputs)
    real = ours["input_mask"][..., None] > 0
    result["sequence_max_diff"] = float(
        (np.abs(out.last_hidden_state.numpy() - ours["sequence_output"]) * real).max())
    result["pooled_max_diff"] = float(np.abs(out.pooler_output.numpy() -
                                             ours["pooled_output"]).max())
    if args.exported_dir:
      classifier, info = transformers.BertForSequenceClassification.from_pretrained(
          args.exported_dir, output_loading_info=True)
      result["load_report"] = {k: sorted(v) for k, v in info.items() if v}
      logits = classifier.eval()(**inputs).logits.numpy()
      result["logits_max_diff"] = float(np.abs(logits - ours["logits"]).max())
  common.report_result(result)


def conll_sentences(path, count):
  """The first `count` sentences of a CoNLL file, as lists of its lines
  (-DOCSTART- lines kept, with the blank line after them)."""
  with open(path, encoding="utf-8") as f:
    blocks = f.read().split("\n\n")
  chosen, sentences = [], 0
  for block in blocks:
    if not block.strip():
      continue
    chosen.append(block.strip("\n"))
    sentences += not block.startswith("-DOCSTART-")
    if sentences == count:
      break
  return "\n\n".join(chosen) + "\n\n"


def read_predictions(path):
  """predictions.txt: [(words, predicted tags)] a sentence."""
  sentences, words, tags = [], [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      parts = line.split()
      if not parts:
        if words:
          sentences.append((words, tags))
        words, tags = [], []
        continue
      words.append(parts[0])
      tags.append(parts[-1])
  if words:
    sentences.append((words, tags))
  return sentences


def worker_hf_tagger(args):
  """transformers' BertForTokenClassification, loaded from our export with
  its own tokenizer, tags the words ours tagged: how many agree."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  tokenizer = transformers.AutoTokenizer.from_pretrained(args.exported_dir)
  model, info = transformers.BertForTokenClassification.from_pretrained(
      args.exported_dir, output_loading_info=True)
  model.eval()
  labels = model.config.id2label
  same_words = words = same_sentences = sentences = skipped = 0
  with torch.inference_mode():
    for sentence_words, ours in read_predictions(args.predictions):
      encoded = tokenizer(sentence_words, is_split_into_words=True, return_tensors="pt")
      word_ids = encoded.word_ids()
      if len(word_ids) > SEQ or len({w for w in word_ids if w is not None}) != len(ours):
        skipped += 1  # Ours cut it into windows, or a word has no piece.
        continue
      predicted = model(**encoded).logits[0].argmax(-1).tolist()
      first = {}
      for position, word in enumerate(word_ids):
        if word is not None and word not in first:
          first[word] = labels[predicted[position]]
      theirs = [first[i] for i in range(len(ours))]
      agree = sum(a == b for a, b in zip(theirs, ours))
      same_words += agree
      words += len(ours)
      same_sentences += agree == len(ours)
      sentences += 1
  common.report_result({
      "tagger_load_report": {k: sorted(v) for k, v in info.items() if v},
      "tagger_labels": [labels[i] for i in range(len(labels))],
      "tagger_lower_case": bool(getattr(tokenizer, "do_lower_case", True)),
      "tagger_same_words": same_words, "tagger_words": words,
      "tagger_same_sentences": same_sentences, "tagger_sentences": sentences,
      "tagger_skipped": skipped})


def check_tagger(args, checkpoint_dir, scratch):
  """Part 4 (see the module doc): the figures of transformers' tagging."""
  conll = args.conll_dir
  data_dir = os.path.join(scratch, "conll")
  os.makedirs(data_dir)
  for name, source in (("train.txt", "train.txt"), ("dev.txt", "dev.txt"),
                       ("test.txt", "dev.txt")):
    with open(os.path.join(data_dir, name), "w", encoding="utf-8") as f:
      f.write(conll_sentences(os.path.join(conll, source), args.ner_sentences))
  tagger_dir = os.path.join(scratch, "tagger")
  run([sys.executable, "run_ner.py", "--do_train", "--do_predict", "--data_dir=" + data_dir,
       "--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
       "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
       "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
       "--max_seq_length=%d" % SEQ, "--num_train_epochs=1", "--learning_rate=5e-5",
       "--output_dir=" + tagger_dir], "NER fine-tuning")
  exported = os.path.join(scratch, "tagger_exported")
  run([sys.executable, "convert_checkpoint.py",
       "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
       "--input_checkpoint=" + tagger_dir, "--output_checkpoint=" + exported,
       "--output_format=huggingface"], "tagger export")
  result = run([environments.python_of("hf"), "-m", "bench.bench_hf_checkpoint",
                "--worker=hf_tagger", "--exported_dir=" + exported,
                "--predictions=" + os.path.join(tagger_dir, "predictions.txt")], "hf tagger")
  with open(os.path.join(tagger_dir, "labels.txt"), encoding="utf-8") as f:
    result["tagger_labels_kept"] = result["tagger_labels"] == f.read().split()
  return result


def entity_types_csv(conll_path, count, path):
  """The first `count` sentences of a CoNLL file as a CSV of text and the
  entity types it holds, `;`-joined; returns the texts."""
  texts = []
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["text", "types"])
    for block in conll_sentences(conll_path, count).split("\n\n"):
      if not block.strip() or block.startswith("-DOCSTART-"):
        continue
      lines = [line.split() for line in block.splitlines()]
      types = sorted({parts[-1][2:] for parts in lines if parts[-1] != "O"})
      texts.append(" ".join(parts[0] for parts in lines))
      writer.writerow([texts[-1], ";".join(types)])
  return texts


def worker_hf_multi_label(args):
  """transformers' BertForSequenceClassification, loaded from our export
  with its own tokenizer, on the texts ours predicted: its problem type,
  labels and the largest difference of its probabilities from ours."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  with open(args.pairs_file, encoding="utf-8", newline="") as f:
    texts = [row[0] for row in list(csv.reader(f))[1:]]
  ours = np.loadtxt(args.predictions, ndmin=2)
  tokenizer = transformers.AutoTokenizer.from_pretrained(args.exported_dir)
  model, info = transformers.BertForSequenceClassification.from_pretrained(
      args.exported_dir, output_loading_info=True)
  with torch.inference_mode():
    encoded = tokenizer(texts, truncation=True, max_length=SEQ, padding=True,
                        return_tensors="pt")
    theirs = torch.sigmoid(model.eval()(**encoded).logits).numpy()
  labels = model.config.id2label
  common.report_result({
      "multi_label_load_report": {k: sorted(v) for k, v in info.items() if v},
      "multi_label_problem_type": model.config.problem_type,
      "multi_label_labels": [labels[i] for i in range(len(labels))],
      "multi_label_texts": len(texts),
      "multi_label_max_diff": float(np.abs(theirs - ours).max()),
      "multi_label_same_choices": int(((theirs >= 0.5) == (ours >= 0.5)).all(1).sum())})


def check_multi_label(args, checkpoint_dir, scratch):
  """Part 5 (see the module doc)."""
  train = os.path.join(scratch, "types_train.csv")
  dev = os.path.join(scratch, "types_dev.csv")
  entity_types_csv(os.path.join(args.conll_dir, "train.txt"), args.ner_sentences, train)
  entity_types_csv(os.path.join(args.conll_dir, "dev.txt"), args.ner_sentences, dev)
  run_dir = os.path.join(scratch, "multi_label")
  run([sys.executable, "run_multi_label.py", "--do_train", "--do_predict",
       "--train_file=" + train, "--test_file=" + dev, "--label_column=types",
       "--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
       "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
       "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
       "--max_seq_length=%d" % SEQ, "--num_train_epochs=1", "--learning_rate=5e-5",
       "--output_dir=" + run_dir], "multi-label fine-tuning")
  exported = os.path.join(scratch, "multi_label_exported")
  run([sys.executable, "convert_checkpoint.py",
       "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
       "--input_checkpoint=" + run_dir, "--output_checkpoint=" + exported,
       "--output_format=huggingface"], "multi-label export")
  return run([environments.python_of("hf"), "-m", "bench.bench_hf_checkpoint",
              "--worker=hf_multi_label", "--exported_dir=" + exported, "--pairs_file=" + dev,
              "--predictions=" + os.path.join(run_dir, "test_results.tsv")], "hf multi-label")


def run(cmd, label):
  result = subprocess.run(cmd, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if result.returncode:
    raise SystemExit("%s failed:\n%s" % (label, result.stderr[-3000:]))
  reported = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
  return json.loads(reported[-1][len("RESULT "):]) if reported else {}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--texts", type=int, default=300)
  parser.add_argument("--train_rows", type=int, default=320)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--output", default=os.path.join(common.REPO_ROOT, "bench", "output",
                                                       "hf_checkpoint.json"))
  parser.add_argument("--conll_dir", default=os.path.join(common.SHARED_DATA, "conll2003"))
  parser.add_argument("--ner_sentences", type=int, default=600)
  parser.add_argument("--worker", choices=["ours", "hf", "ours_steps", "hf_steps", "hf_tagger",
                                           "hf_multi_label"])
  for name in ("pairs_file", "checkpoint_dir", "classifier_dir", "model_dir", "ours_output",
               "exported_dir", "predictions"):
    parser.add_argument("--" + name)
  args = parser.parse_args()
  if args.worker:
    return {"ours": worker_ours, "hf": worker_hf, "ours_steps": worker_ours_steps,
            "hf_steps": worker_hf_steps, "hf_tagger": worker_hf_tagger,
            "hf_multi_label": worker_hf_multi_label}[args.worker](args)
  model_dir = pretrained.hf_directory()
  mrpc = os.path.join(args.glue_dir, "MRPC")
  if model_dir is None or not os.path.exists(os.path.join(mrpc, "dev.tsv")):
    print("hf_checkpoint: skipped: " + (pretrained.WHERE if model_dir is None else
                                        "no %s/dev.tsv (GLUE's download script)" % mrpc))
    return
  scratch = tempfile.mkdtemp(prefix="hf_checkpoint_")
  try:
    checkpoint_dir = pretrained.imported(os.path.join(scratch, "imported"))
    data_dir = os.path.join(scratch, "MRPC")
    os.makedirs(data_dir)
    with open(os.path.join(mrpc, "train.tsv"), encoding="utf-8") as f:
      lines = f.readlines()[:1 + args.train_rows]
    with open(os.path.join(data_dir, "train.tsv"), "w", encoding="utf-8") as f:
      f.writelines(lines)
    shutil.copy(os.path.join(mrpc, "dev.tsv"), data_dir)
    classifier_dir = os.path.join(scratch, "fine_tuned")
    run([sys.executable, "run_classifier.py", "--task_name=MRPC", "--do_train",
         "--data_dir=" + data_dir, "--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
         "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
         "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
         "--num_train_epochs=1", "--learning_rate=5e-5", "--output_dir=" + classifier_dir],
        "fine-tuning")
    exported_dir = os.path.join(scratch, "exported")
    run([sys.executable, "convert_checkpoint.py",
         "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
         "--input_checkpoint=" + classifier_dir, "--output_checkpoint=" + exported_dir,
         "--output_format=huggingface"], "export")
    common_flags = ["--pairs_file=" + os.path.join(mrpc, "dev.tsv"), "--texts=%d" % args.texts]
    ours_output = os.path.join(scratch, "ours.npz")
    run([sys.executable, "-m", "bench.bench_hf_checkpoint", "--worker=ours",
         "--checkpoint_dir=" + checkpoint_dir, "--classifier_dir=" + classifier_dir,
         "--output=" + ours_output] + common_flags, "ours")
    result = run([environments.python_of("hf"), "-m", "bench.bench_hf_checkpoint", "--worker=hf",
                  "--model_dir=" + model_dir, "--ours_output=" + ours_output,
                  "--exported_dir=" + exported_dir] + common_flags, "hf")
    steps_output = os.path.join(scratch, "ours_steps.npz")
    run([sys.executable, "-m", "bench.bench_hf_checkpoint", "--worker=ours_steps",
         "--checkpoint_dir=" + checkpoint_dir, "--ours_output=" + ours_output,
         "--output=" + steps_output] + common_flags, "ours' training steps")
    result.update(run([environments.python_of("hf"), "-m", "bench.bench_hf_checkpoint",
                       "--worker=hf_steps", "--model_dir=" + model_dir,
                       "--ours_output=" + steps_output], "Hugging Face's training steps"))
    if os.path.exists(os.path.join(args.conll_dir, "train.txt")):
      result.update(check_tagger(args, checkpoint_dir, scratch))
      result.update(check_multi_label(args, checkpoint_dir, scratch))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  print("In:  %d of %d MRPC dev pairs tokenized to the same ids by both sides; largest "
        "difference from transformers' BertModel: last layer %.2g, pooled output %.2g" % (
            result["same_ids"], result["texts"], result["sequence_max_diff"],
            result["pooled_max_diff"]))
  print("Out: transformers loads the exported classifier with %s; largest logit "
        "difference from ours %.2g" % (
            "no missing or unexpected weights" if not result["load_report"] else
            result["load_report"], result["logits_max_diff"]))
  print("Training: %d steps from the same weights on the same batches, dropout off, ours "
        "with Hugging Face Trainer's defaults against PyTorch's AdamW: losses differ by at "
        "most %.2g, the final logits (up to %.2g) by %.2g" % (
            result["steps"], result["step_loss_max_diff"], result["step_logits_max"],
            result["step_logits_max_diff"]))
  if "tagger_words" in result:
    print("Tagger out: transformers loads the exported BertForTokenClassification with %s, "
          "labels %s (%s labels.txt), a tokenizer that %s; it tags %d of %d CoNLL-2003 dev "
          "words (%d of %d sentences whole) as ours did; %d sentences left out (longer "
          "than %d pieces)" % (
              "no missing or unexpected weights" if not result["tagger_load_report"] else
              result["tagger_load_report"], ",".join(result["tagger_labels"]),
              "the run's" if result["tagger_labels_kept"] else "NOT the run's",
              "lower-cases" if result["tagger_lower_case"] else "keeps case",
              result["tagger_same_words"], result["tagger_words"],
              result["tagger_same_sentences"], result["tagger_sentences"],
              result["tagger_skipped"], SEQ))
  if "multi_label_texts" in result:
    print("Multi-label out: transformers loads the exported BertForSequenceClassification "
          "with %s, problem_type %s, labels %s; on %d CoNLL-2003 dev sentences its "
          "probabilities differ from ours by at most %.2g, and %d choose the same labels "
          "(at 0.5)" % (
              "no missing or unexpected weights" if not result["multi_label_load_report"]
              else result["multi_label_load_report"], result["multi_label_problem_type"],
              ",".join(result["multi_label_labels"]), result["multi_label_texts"],
              result["multi_label_max_diff"], result["multi_label_same_choices"]))
  common.write_text(args.output, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
  main()
