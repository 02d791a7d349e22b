"""The paper's pre-training ablations (run_pretraining.py --pretraining_objective):
the causal mask of the left-to-right model, its unmasked next-token data, and
the masked LM without next-sentence prediction."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import (REPO_ROOT, data_file, guessing_baselines, read_eval_results,
                      reference_config, shared_path)
from data_prep.pretraining import dataset as pretraining_dataset
from data_prep import tokenization
import modeling
from modeling import pretraining
from plumbing.errors import UserError

RECORDS = data_file("pretraining_reference/sample_default.tfrecord")  # seq 128, 20 predictions


def _ids(seed, shape=(2, 12), vocab=99):
  return np.random.RandomState(seed).randint(5, vocab, size=shape).astype(np.int32)


@pytest.mark.parametrize("causal", [True, False])
def test_causal_mask_hides_the_future_and_only_the_future(causal):
  config = reference_config(causal_attention=True) if causal else reference_config()
  model = modeling.BertModel(config)
  ids = _ids(0, vocab=config.vocab_size)
  mask = np.ones_like(ids)
  mask[1, 9:] = 0
  changed = ids.copy()
  changed[:, 6] = (changed[:, 6] + 1) % config.vocab_size
  before = model({"input_ids": ids, "input_mask": mask})["sequence_output"].numpy()
  after = model({"input_ids": changed, "input_mask": mask})["sequence_output"].numpy()
  moved = np.abs(before - after).max(axis=2)  # [batch, position]
  if causal:
    np.testing.assert_array_equal(moved[:, :6], 0.0)
  else:
    assert (moved[:, :6] > 1e-4).all()  # A bidirectional model sees it everywhere.
  assert (moved[0, 6:] > 1e-4).all() and (moved[1, 6:9] > 1e-4).all()


def test_causal_pooler_reads_the_last_real_token_and_output_positions_agree():
  config = reference_config(causal_attention=True)
  model = modeling.BertModel(config)
  ids = _ids(1, vocab=config.vocab_size)
  mask = np.ones_like(ids)
  mask[1, 7:] = 0
  full = model({"input_ids": ids, "input_mask": mask})
  # Changing only the padding after position 6 leaves example 1's pooled output.
  padded = ids.copy()
  padded[1, 7:] = 3
  again = model({"input_ids": padded, "input_mask": mask})
  np.testing.assert_array_equal(full["pooled_output"].numpy()[1], again["pooled_output"].numpy()[1])
  # ... while its last real token moves it.
  last = ids.copy()
  last[1, 6] = (last[1, 6] + 1) % config.vocab_size
  moved = model({"input_ids": last, "input_mask": mask})["pooled_output"].numpy()[1]
  assert np.abs(moved - full["pooled_output"].numpy()[1]).max() > 1e-4
  positions = np.array([[0, 4, 11], [2, 3, 6]], np.int32)
  part = model({"input_ids": ids, "input_mask": mask}, output_positions=positions)
  expected = np.stack([full["sequence_output"].numpy()[b, positions[b]] for b in range(2)])
  np.testing.assert_allclose(part["sequence_output"].numpy(), expected, rtol=0, atol=1e-5)
  np.testing.assert_allclose(part["pooled_output"].numpy(), full["pooled_output"].numpy(),
                             rtol=0, atol=1e-5)


def _contiguous_in(tokens, corpus_tokens, index):
  first = index.get(tokens[0], [])
  return any(corpus_tokens[i:i + len(tokens)] == tokens for i in first)


def test_left_to_right_examples_are_the_original_records_unmasked():
  """Restored segments are runs of the tokenized sample text (the masked
  ones, with [MASK] or random tokens, are not), and every position's target
  is the next token."""
  tokenizer = tokenization.FullTokenizer(data_file("vocab/bert_uncased_vocab.txt"), True)
  with open(shared_path("sample_text.txt"), encoding="utf-8") as f:
    corpus = tokenizer.tokenize(f.read())
  index = {}
  for i, token in enumerate(corpus):
    index.setdefault(token, []).append(i)
  dataset = pretraining_dataset.pretraining_dataset(
      [RECORDS], 128, 20, 4, is_training=False, repeat=False, objective="ltr")
  raw = pretraining_dataset.pretraining_dataset(
      [RECORDS], 128, 20, 4, is_training=False, repeat=False)
  examples = 0
  for batch, masked in zip(dataset, raw):
    for b in range(batch["input_ids"].shape[0]):
      ids = batch["input_ids"].numpy()[b]
      real = int(batch["input_mask"].numpy()[b].sum())
      tokens = tokenizer.convert_ids_to_tokens(ids[:real].tolist())
      assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "[MASK]" not in tokens
      separator = tokens.index("[SEP]")
      for segment in (tokens[1:separator], tokens[separator + 1:-1]):
        assert _contiguous_in(segment, corpus, index), segment
      masked_tokens = tokenizer.convert_ids_to_tokens(
          masked["input_ids"].numpy()[b][1:separator].tolist())
      if "[MASK]" in masked_tokens:
        assert not _contiguous_in(masked_tokens, corpus, index)
      np.testing.assert_array_equal(batch["masked_lm_positions"].numpy()[b], np.arange(127))
      np.testing.assert_array_equal(batch["masked_lm_ids"].numpy()[b], ids[1:])
      np.testing.assert_array_equal(batch["masked_lm_weights"].numpy()[b],
                                    (np.arange(1, 128) < real).astype(np.float32))
      examples += 1
  assert examples == 23


def test_objectives_and_configs_must_agree():
  with pytest.raises(UserError, match="causal_attention"):
    pretraining.create_pretrainer(reference_config(), "ltr")
  with pytest.raises(UserError, match="bidirectional"):
    pretraining.create_pretrainer(reference_config(causal_attention=True), "mlm")
  with pytest.raises(UserError, match="causal_attention"):
    modeling.BertConfig.from_dict(dict(vocab_size=10, causal_attention="yes"))
  names = lambda objective, **c: set(
      pretraining.create_pretrainer(reference_config(**c), objective).original_names())
  nsp = {"cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"}
  assert nsp <= names("mlm_nsp")
  assert not nsp & names("mlm") and not nsp & names("ltr", causal_attention=True)
  assert names("mlm") == names("mlm_nsp") - nsp


def _config_file(tmp_path, **overrides):
  with open(data_file("eval_reference/bert_config.json")) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **overrides)
  path = tmp_path / "config.json"
  path.write_text(json.dumps(values))
  return str(path)


def _pretrain(tmp_path, objective, config, steps=40):
  out = tmp_path / objective
  result = subprocess.run(
      [sys.executable, "run_pretraining.py", "--input_file=" + RECORDS,
       "--output_dir=" + str(out), "--do_train", "--do_eval", "--bert_config_file=" + config,
       "--pretraining_objective=" + objective, "--train_batch_size=8",
       "--num_train_steps=%d" % steps, "--num_warmup_steps=5", "--learning_rate=1e-2",
       "--save_checkpoints_steps=%d" % steps, "--iterations_per_loop=%d" % (steps // 2),
       "--max_eval_steps=3", "--eval_batch_size=8"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
  return out, result


def _eval_results(out):
  return read_eval_results(out / "eval_results.txt")


def test_mlm_run_has_no_next_sentence_variables_or_metrics(tmp_path):
  out, result = _pretrain(tmp_path, "mlm", _config_file(tmp_path))
  assert result.returncode == 0, result.stderr[-3000:]
  variables = [name for name, _ in tf.train.list_variables(str(out / "ckpt-40"))]
  assert any("masked_lm" in n for n in variables)
  assert not [n for n in variables if "next_sentence" in n]
  results = _eval_results(out)
  assert set(results) == {"global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"}
  # The loss is the masked LM's alone (a next-sentence loss would add ~0.7):
  # only its batch-mean versus prediction-mean averaging differs.
  assert abs(float(results["loss"]) - float(results["masked_lm_loss"])) < 0.2, results


def test_ltr_run_learns_next_tokens(tmp_path):
  causal = _config_file(tmp_path, causal_attention=True)
  out, result = _pretrain(tmp_path, "ltr", causal, steps=60)
  assert result.returncode == 0, result.stderr[-3000:]
  losses = [float(line.split("loss = ")[1].split(",")[0])
            for line in result.stderr.splitlines() if "step " in line and "loss = " in line]
  results = _eval_results(out)
  assert "next_sentence_accuracy" not in results
  # The next token of 23 records seen many times: far better than a model
  # that ignores the tokens before (the next tokens' entropy, and the
  # commonest token's share).
  majority, entropy = guessing_baselines(RECORDS, 128, 20, next_token=True)
  assert losses[0] > losses[-1] and losses[-1] < entropy / 2, (losses, entropy)
  assert float(results["masked_lm_accuracy"]) > 3 * majority, (results, majority)
