"""Remakes tests/data/modeling_reference/trainer_steps.npz with PyTorch and
transformers: the steps Hugging Face's Trainer takes by default, on the
reference model.

The model is modeling_reference's checkpoint (many variables; its inputs
look the same word up several times in a row) as transformers'
BertForPreTraining, with dropout 0; the loss is its masked-LM + next-sentence
loss on inputs.npz (a masked position of weight 0 gets label -100). Each of
STEPS steps on that batch: backward, torch.nn.utils.clip_grad_norm_(1.0),
torch.optim.AdamW (lr LEARNING_RATE, eps 1e-8, no weight decay), and
get_linear_schedule_with_warmup (WARMUP_STEPS of SCHEDULE_STEPS), as the
Trainer steps. Written: the loss and learning rate of each step and every
parameter after the last, under transformers' names; and the same for the
reference classifier (BertForSequenceClassification, 3 labels, no masked-LM
head: its word embeddings get gradients by lookup only) on the batch with
its words drawn from five (classifier/...), where clipping by the summed
gradient's norm differs from the original's count of lookups.

Usage, from the repository root: first the checkpoint as a Hugging Face
directory, with this project's converter (any vocabulary of 99 lines), then
this script in an environment with torch and transformers (bench's `hf`):

  mkdir -p /tmp/ref && for i in $(seq 0 98); do echo "t$i"; done > /tmp/ref/vocab.txt
  .venv/bin/python convert_checkpoint.py \\
      --input_checkpoint=tests/data/modeling_reference/model.ckpt \\
      --bert_config_file=tests/data/modeling_reference/bert_config.json \\
      --vocab_file=/tmp/ref/vocab.txt --output_checkpoint=/tmp/ref/hf \\
      --output_format=huggingface --hf_architecture=BertForPreTraining
  .venv/bin/python convert_checkpoint.py \\
      --input_checkpoint=tests/data/modeling_reference/model.ckpt \\
      --bert_config_file=tests/data/modeling_reference/bert_config.json \\
      --vocab_file=/tmp/ref/vocab.txt --output_checkpoint=/tmp/ref/hf_classifier \\
      --output_format=huggingface --hf_architecture=BertForSequenceClassification
  bench/output/envs/hf/bin/python tests/reference_makers/make_torch_trainer_reference.py \\
      --hf_dir=/tmp/ref/hf [--output_dir=DIR]
"""

import argparse
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
COMMITTED = os.path.normpath(os.path.join(HERE, "..", "data", "modeling_reference"))

LEARNING_RATE, STEPS, WARMUP_STEPS, SCHEDULE_STEPS = 1e-3, 6, 2, 10


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--hf_dir", required=True)
  parser.add_argument("--output_dir", default=COMMITTED)
  args = parser.parse_args()
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  torch.manual_seed(0)
  inputs = dict(np.load(os.path.join(COMMITTED, "inputs.npz")))
  model = transformers.BertForPreTraining.from_pretrained(
      args.hf_dir, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  model.train()
  labels = np.full(inputs["input_ids"].shape, -100, np.int64)
  for row, (positions, ids, weights) in enumerate(zip(
      inputs["masked_lm_positions"], inputs["masked_lm_ids"], inputs["masked_lm_weights"])):
    for position, token, weight in zip(positions, ids, weights):
      if weight > 0:
        labels[row, position] = token
  batch = {"input_ids": torch.tensor(inputs["input_ids"], dtype=torch.long),
           "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
           "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long),
           "labels": torch.tensor(labels),
           "next_sentence_label": torch.tensor(inputs["next_sentence_labels"].reshape(-1),
                                               dtype=torch.long)}
  optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, eps=1e-8,
                                weight_decay=0.0)
  schedule = transformers.get_linear_schedule_with_warmup(optimizer, WARMUP_STEPS,
                                                          SCHEDULE_STEPS)
  losses, rates = [], []
  for _ in range(STEPS):
    rates.append(schedule.get_last_lr()[0])
    loss = model(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    losses.append(loss.item())
  params = {"param/" + name: value.detach().numpy().copy()
            for name, value in model.state_dict().items()
            if value.dtype == torch.float32}
  classifier = classifier_steps(args.hf_dir, inputs)
  path = os.path.join(args.output_dir, "trainer_steps.npz")
  np.savez(path, losses=np.array(losses), learning_rates=np.array(rates), **params,
           **classifier)
  print("wrote %s: losses %s, classifier losses %s" % (path, losses,
                                                     classifier["classifier/losses"]))


def repeated_words(inputs):
  """inputs' batch with its words drawn from five: each looked up many
  times, so that a clipping norm counting lookups differs from the norm of
  the summed gradient."""
  ids = np.random.RandomState(3).randint(5, 10, size=inputs["input_ids"].shape)
  return np.where(inputs["input_mask"] > 0, ids, 0).astype(np.int64)


def classifier_steps(hf_dir, inputs):
  """The same steps for the reference classifier (3 labels; its word
  embeddings get gradients by lookup only) on repeated_words()."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  model = transformers.BertForSequenceClassification.from_pretrained(
      hf_dir + "_classifier", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  model.train()
  batch = {"input_ids": torch.tensor(repeated_words(inputs)),
           "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
           "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long),
           "labels": torch.tensor(inputs["label_ids"], dtype=torch.long)}
  optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, eps=1e-8,
                                weight_decay=0.0)
  schedule = transformers.get_linear_schedule_with_warmup(optimizer, WARMUP_STEPS,
                                                          SCHEDULE_STEPS)
  losses = []
  for _ in range(STEPS):
    loss = model(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    losses.append(loss.item())
  out = {"classifier/param/" + name: value.detach().numpy().copy()
         for name, value in model.state_dict().items() if value.dtype == torch.float32}
  out["classifier/losses"] = np.array(losses)
  out["classifier/input_ids"] = repeated_words(inputs)
  return out


if __name__ == "__main__":
  main()
