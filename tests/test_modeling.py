"""The Keras model against outputs of the original modeling code (float32, 1e-5)."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import (MODELING_REF, PRETRAINING_FEATURES, REPO_ROOT, data_file,
                      reference_checkpoint, reference_config, reference_inputs,
                      reference_outputs, shared_path)
import modeling
from modeling import checkpoints
from modeling import heads as heads_lib
from modeling.blocks import packed_tokens

REF = MODELING_REF
FEATURES = PRETRAINING_FEATURES
_config = reference_config
_inputs = reference_inputs
_reference = reference_outputs
_ckpt = reference_checkpoint


def _close(got, want, atol=1e-5):
  np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=atol)


def test_pretrainer_matches_original():
  model = modeling.BertPretrainer(_config())
  report = modeling.load_original_checkpoint(model, _ckpt())
  assert len(report.loaded) == 46 and not report.missing
  assert set(report.unused) == {"output_weights", "output_bias",
                                "cls/squad/output_weights", "cls/squad/output_bias"}
  inputs = _inputs()
  out = model({k: inputs[k] for k in FEATURES}, training=False)
  ref = _reference()
  encoder = model.bert({k: inputs[k] for k in FEATURES[:3]}, training=False)
  for i, layer in enumerate(encoder["encoder_outputs"]):
    _close(layer, ref["encoder_layer_%d" % i])
  _close(encoder["embedding_output"], ref["embedding_output"])
  _close(encoder["sequence_output"], ref["sequence_output"])
  _close(encoder["pooled_output"], ref["pooled_output"])
  # The pre-training model computes its last layer at the masked positions only.
  at_masked = np.take_along_axis(ref["sequence_output"],
                                 inputs["masked_lm_positions"][:, :, None], axis=1)
  _close(out["sequence_output"], at_masked)
  _close(out["pooled_output"], ref["pooled_output"])
  _close(model.bert.embedding_table, ref["embedding_table"], atol=0)
  _close(out["masked_lm_log_probs"], ref["mlm_log_probs"])
  _close(out["masked_lm_per_example_loss"], ref["mlm_per_example_loss"])
  _close(out["masked_lm_loss"], ref["mlm_loss"])
  _close(out["next_sentence_log_probs"], ref["nsp_log_probs"])
  _close(out["next_sentence_per_example_loss"], ref["nsp_per_example_loss"])
  _close(out["next_sentence_loss"], ref["nsp_loss"])


def test_classifier_and_span_heads_match_original():
  inputs = _inputs()
  ref = _reference()
  classifier = modeling.BertClassifier(_config(), num_labels=3)
  modeling.load_original_checkpoint(classifier, _ckpt(), log=False)
  out = classifier({"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
                    "segment_ids": inputs["segment_ids"], "label_ids": inputs["label_ids"]})
  _close(out["logits"], ref["classifier_logits"])
  _close(out["probabilities"], ref["classifier_probabilities"])
  _close(out["per_example_loss"], ref["classifier_per_example_loss"])
  _close(out["loss"], ref["classifier_loss"])
  span = modeling.BertSpanPredictor(_config())
  modeling.load_original_checkpoint(span, _ckpt(), log=False)
  out = span({k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")})
  _close(out["start_logits"], ref["squad_start_logits"])
  _close(out["end_logits"], ref["squad_end_logits"])


def test_regression_head():
  model = modeling.BertClassifier(_config(), num_labels=1)
  modeling.load_original_checkpoint(model.bert, _ckpt(), log=False)
  inputs = _inputs()
  targets = np.array([0.5, 3.0, -1.0], np.float32)
  out = model({"input_ids": inputs["input_ids"], "input_mask": inputs["input_mask"],
               "segment_ids": inputs["segment_ids"], "label_ids": targets})
  w = model.classifier.output_weights.numpy()
  b = model.classifier.output_bias.numpy()
  want = _reference()["pooled_output"] @ w.T + b
  _close(out["logits"], want)
  _close(out["loss"], np.mean((want[:, 0] - targets) ** 2))
  assert "probabilities" not in out

def test_multiple_choice_scores_each_pooled_output():
  """SWAG's model on the three reference sequences as the three choices of one
  example: one vector on each of the original's pooled outputs, softmax over
  the choices."""
  model = modeling.BertMultipleChoice(_config(), num_choices=3)
  modeling.load_original_checkpoint(model.bert, _ckpt(), log=False)
  inputs = _inputs()
  features = {k: inputs[k][None] for k in ("input_ids", "input_mask", "segment_ids")}
  out = model(dict(features, label_ids=np.array([2])))
  w = model.classifier.output_weights.numpy()
  b = model.classifier.output_bias.numpy()
  want = (_reference()["pooled_output"] @ w.T + b).reshape(1, 3)
  probabilities = np.exp(want) / np.exp(want).sum()
  _close(out["logits"], want)
  _close(out["probabilities"], probabilities)
  _close(out["loss"], -np.log(probabilities[0, 2]))
  # Two examples at once score the same as each alone.
  both = {k: np.concatenate([v, v[:, ::-1]]) for k, v in features.items()}
  _close(model(both)["logits"], np.concatenate([want, want[:, ::-1]]))


def test_head_shape_mismatch_names_variable_and_shapes():
  model = modeling.BertClassifier(_config(), num_labels=2)
  with pytest.raises(modeling.CheckpointMismatchError,
                     match=r"output_weights has shape \[3, 32\], but the model expects \[2, 32\]"):
    modeling.load_original_checkpoint(model, _ckpt())
  wrong = modeling.BertModel(_config(intermediate_size=40))
  with pytest.raises(modeling.CheckpointMismatchError, match="intermediate/dense/kernel"):
    modeling.load_original_checkpoint(wrong, _ckpt())


def test_default_mask_and_segments_are_ones_and_zeros():
  model = modeling.BertModel(_config())
  modeling.load_original_checkpoint(model, _ckpt(), log=False)
  ids = _inputs()["input_ids"][:1]
  a = model({"input_ids": ids})
  b = model({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
  _close(a["sequence_output"], np.asarray(b["sequence_output"]), atol=0)


def test_original_format_round_trip_is_exact(tmp_path):
  model = modeling.BertPretrainer(_config())
  modeling.load_original_checkpoint(model, _ckpt(), log=False)
  prefix = modeling.save_original_checkpoint(model, str(tmp_path / "out" / "bert_model.ckpt"))
  reader = tf.train.load_checkpoint(prefix)
  original = tf.train.load_checkpoint(_ckpt())
  for name in model.original_names():
    np.testing.assert_array_equal(reader.get_tensor(name), original.get_tensor(name))
  # The directory resolves to it, and loading it back is exact.
  again = modeling.BertPretrainer(_config())
  modeling.load_original_checkpoint(again, str(tmp_path / "out"), log=False)
  for a, b in zip(model.weights, again.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_object_based_checkpoints_load_anywhere(tmp_path):
  model = modeling.BertSpanPredictor(_config())
  modeling.load_original_checkpoint(model, _ckpt(), log=False)
  prefix = modeling.save_checkpoint(model, str(tmp_path / "ours" / "ckpt-1"))
  assert checkpoints.is_object_based(prefix)
  again = modeling.BertSpanPredictor(_config())
  modeling.load_checkpoint(again, prefix)
  for a, b in zip(model.weights, again.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  # The same function reads the released (name-based) format too.
  third = modeling.BertSpanPredictor(_config())
  modeling.load_checkpoint(third, _ckpt())
  np.testing.assert_array_equal(third.span.output_weights.numpy(),
                                model.span.output_weights.numpy())


def test_an_encoder_alone_reads_the_encoder_of_a_task_models_checkpoint(tmp_path):
  """A fine-tuned run's object-based checkpoint holds a task model, its
  encoder under `bert`: a BertModel (embed.py, extract_features) loads that
  encoder's every weight, none drawn at random."""
  from modeling.checkpoints import loading  # pylint: disable=g-import-not-at-top
  model = modeling.BertSpanPredictor(_config())
  modeling.load_original_checkpoint(model, _ckpt(), log=False)
  for variable in model.bert.weights:  # Not the released values: this checkpoint's own.
    variable.assign(variable + 0.5)
  prefix = modeling.save_checkpoint(model, str(tmp_path / "run" / "ckpt-1"))
  with modeling.deferred_initialization() as deferral:
    encoder = modeling.BertModel(_config())
  deferral.pending = [(v, lambda *_: pytest.fail("drew a loaded weight"))
                      for v, _ in deferral.pending]
  loading.load_weights(encoder, prefix, deferral)
  assert not deferral.pending
  want = model.bert.original_names()
  for name, variable in encoder.original_names().items():
    np.testing.assert_array_equal(variable.numpy(), want[name].numpy(), err_msg=name)


def test_convert_checkpoint_cli_both_ways(tmp_path):
  def convert(src, dst, fmt, extra=()):
    result = subprocess.run(
        [sys.executable, "convert_checkpoint.py",
         "--bert_config_file=" + data_file(REF + "bert_config.json"),
         "--input_checkpoint=" + src, "--output_checkpoint=" + dst,
         "--output_format=" + fmt] + list(extra),
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result
  keras_dir = tmp_path / "keras"
  convert(_ckpt(), str(keras_dir / "ckpt"), "keras")
  # The intermediate is ours: object-based, none of the original's names.
  intermediate = tf.train.load_checkpoint(str(keras_dir)).get_variable_to_shape_map()
  assert "_CHECKPOINTABLE_OBJECT_GRAPH" in intermediate
  assert not [n for n in intermediate if n.startswith(("bert/", "cls/"))]
  assert checkpoints.is_object_based(str(keras_dir))
  back = str(tmp_path / "back" / "bert_model.ckpt")
  convert(str(keras_dir), back, "original")
  assert not checkpoints.is_object_based(back)
  original = tf.train.load_checkpoint(_ckpt())
  converted = tf.train.load_checkpoint(back)
  names = set(original.get_variable_to_shape_map())
  assert set(converted.get_variable_to_shape_map()) == names
  for name in names:
    np.testing.assert_array_equal(converted.get_tensor(name), original.get_tensor(name))


def test_released_configs_load_unchanged():
  base = modeling.BertConfig.from_json_file(
      shared_path("bert_configs/uncased_L-12_H-768_A-12.bert_config.json"))
  assert (base.vocab_size, base.hidden_size, base.num_hidden_layers) == (30522, 768, 12)
  chinese = modeling.BertConfig.from_json_file(
      shared_path("bert_configs/chinese_L-12_H-768_A-12.bert_config.json"))
  assert chinese.vocab_size == 21128 and chinese.pooler_type == "first_token_transform"
  assert json.loads(chinese.to_json_string())["directionality"] == "bidi"
  mini = modeling.BertConfig.from_json_file(
      shared_path("bert_configs/uncased_L-4_H-256_A-4.bert_config.json"))
  assert (mini.hidden_size, mini.num_attention_heads, mini.intermediate_size) == (256, 4, 1024)
  defaults = modeling.BertConfig(vocab_size=10)
  assert (defaults.hidden_size, defaults.type_vocab_size, defaults.initializer_range,
          defaults.hidden_act, defaults.max_position_embeddings) == (768, 16, 0.02, "gelu", 512)


@pytest.mark.parametrize("change,field", [
    ({"vocab_size": None}, "vocab_size"),
    ({"hidden_size": "768"}, "hidden_size"),
    ({"num_attention_heads": 5}, "num_attention_heads"),
    ({"hidden_act": "swish"}, "hidden_act"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
])
def test_bad_configs_name_the_field(change, field):
  values = _config().to_dict()
  values.update(change)
  if change.get("vocab_size", 0) is None:
    del values["vocab_size"]
  with pytest.raises(ValueError, match=field):
    modeling.BertConfig.from_dict(values)


def test_bad_inputs_fail_clearly():
  model = modeling.BertModel(_config())
  ids = np.array([[1, 2, 3]])
  with pytest.raises(tf.errors.InvalidArgumentError, match="outside the vocabulary"):
    model({"input_ids": np.array([[1, 99, 3]])})
  with pytest.raises(tf.errors.InvalidArgumentError, match="type_vocab_size"):
    model({"input_ids": ids, "segment_ids": np.array([[0, 3, 0]])})
  with pytest.raises(modeling.InvalidInputError, match="max_position_embeddings=40"):
    model({"input_ids": np.ones((1, 41), np.int32)})


def test_activations():
  from modeling.blocks import layers
  x = tf.constant([-3.0, -0.5, 0.0, 0.7, 2.0])
  want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  _close(layers.gelu(x), want.numpy(), atol=1e-7)
  assert layers.get_activation("linear") is None and layers.get_activation("ReLU") is tf.nn.relu
  with pytest.raises(ValueError, match="Unsupported activation"):
    layers.get_activation("swish")


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16, tf.float16])
def test_inference_moves_heads_as_words(dtype):
  """Outside training the attention's transposes move the values' bytes as
  float64 words (faster than a oneDNN reorder at request sizes): the same
  bits as tf.transpose, NaN payloads and subnormals included, and no
  transpose of the model's own dtype left in the graph."""
  from modeling.blocks import layers
  rng = np.random.default_rng(0)
  width = {tf.float32: np.uint32, tf.bfloat16: np.uint16, tf.float16: np.uint16}[dtype]
  per_word = 8 // dtype.size
  bits = rng.integers(0, np.iinfo(width).max, size=(2, 5, 3, 8 // per_word, per_word),
                      dtype=width)
  bits[0, 0, 0, 0, :2] = [1, np.iinfo(width).max]
  bits[0, 0, 1, 0, :2] = [np.iinfo(width).max // 2 + 2, 1]
  x = tf.bitcast(tf.constant(bits), dtype)
  got = tf.function(lambda x: layers.transpose_words(x, [0, 2, 1, 3]))(x)
  assert got.dtype == dtype and got.shape == (2, 3, 5, 8 // per_word, per_word)
  np.testing.assert_array_equal(tf.bitcast(got, tf.as_dtype(width)).numpy(),
                                np.transpose(bits, [0, 2, 1, 3, 4]))
  # Gradients without dropout (training=False) move back the same way.
  y = tf.cast(tf.reshape(tf.range(240), [2, 5, 3, 8 // per_word, per_word]), dtype)
  weights = tf.cast(tf.reshape(tf.range(240) % 7, [2, 3, 5, 8 // per_word, per_word]), dtype)
  with tf.GradientTape() as tape:
    tape.watch(y)
    total = tf.reduce_sum(layers.transpose_words(y, [0, 2, 1, 3]) * weights)
  np.testing.assert_array_equal(
      tf.cast(tape.gradient(total, y), tf.float32).numpy(),
      np.transpose(tf.cast(weights, tf.float32).numpy(), [0, 2, 1, 3, 4]))
  attention = layers.SelfAttention(modeling.BertConfig(
      vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
      intermediate_size=8))
  for training, moved_as in ((False, tf.float64), (True, tf.float32)):
    graph = tf.function(lambda h, m, t=training: attention(h, m, training=t)).get_concrete_function(
        tf.TensorSpec([1, 3, 8], tf.float32), tf.TensorSpec([1, 1, 1, 3], tf.float32)).graph
    transposes = [op for op in graph.get_operations() if op.type == "Transpose"]
    assert [op.get_attr("T") for op in transposes] == [moved_as] * 4


def test_packed_tokens_index_real_tokens_then_fillers():
  """Worked by hand: a [2, 3] batch with 3 real tokens, rounded up to 2 rows
  an example (4 rows): the fourth reads the zero row one past the end."""
  packing = packed_tokens.PackedTokens(tf.constant([[1, 1, 0], [1, 0, 0]]), rows_per_example=2)
  np.testing.assert_array_equal(packing.index.numpy()[:, 0], [0, 1, 3, 6])
  np.testing.assert_array_equal(packing.rows_at(tf.constant([[1], [0]])).numpy(), [1, 2])
  sequence = tf.reshape(tf.range(1.0, 13.0), [2, 3, 2])
  rows = packing.pack(sequence)
  np.testing.assert_array_equal(rows.numpy(), [[1, 2], [3, 4], [7, 8], [0, 0]])
  np.testing.assert_array_equal(packing.unpack(rows + 100.0).numpy(), [
      [[101, 102], [103, 104], [0, 0]], [[107, 108], [0, 0], [0, 0]]])


def test_training_runs_real_tokens_only_with_the_original_values():
  """In training the encoder's token-wise work runs on the real tokens only
  (zeros come out at the padding), giving the original's values (dropout
  off) and the gradients of the padded computation; the span head, whose
  loss the original computed over the padding too, still gets every
  position."""
  inputs = _inputs()
  ref = _reference()
  assert inputs["input_mask"].min() == 0  # The reference batch has padding.
  config = _config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  pretrainer = modeling.BertPretrainer(config)
  modeling.load_original_checkpoint(pretrainer, _ckpt(), log=False)
  out = pretrainer({k: inputs[k] for k in FEATURES}, training=True)
  _close(out["masked_lm_log_probs"], ref["mlm_log_probs"])
  _close(out["next_sentence_log_probs"], ref["nsp_log_probs"])
  _close(out["loss"], ref["mlm_loss"] + ref["nsp_loss"])
  encoder_inputs = {k: inputs[k] for k in FEATURES[:3]}
  real = inputs["input_mask"][:, :, None].astype(np.float32)
  weights = np.linspace(-1.0, 1.0, config.hidden_size, dtype=np.float32)
  gradients, variables = {}, pretrainer.bert.trainable_variables
  for pack in (True, False):
    with tf.GradientTape() as tape:
      encoder = pretrainer.bert(encoder_inputs, training=True, pack_tokens=pack)
      total = (tf.reduce_sum(encoder["sequence_output"] * real * weights) +
               tf.reduce_sum(encoder["pooled_output"]))
    gradients[pack] = [tf.convert_to_tensor(g).numpy() for g in tape.gradient(total, variables)]
    if pack:
      assert not np.any(encoder["sequence_output"].numpy() * (1 - real))
      _close(encoder["sequence_output"].numpy() * real, ref["sequence_output"] * real)
      _close(encoder["pooled_output"], ref["pooled_output"])
  for variable, packed, padded in zip(variables, gradients[True], gradients[False]):
    np.testing.assert_allclose(packed, padded, rtol=0, atol=1e-6 * (np.abs(padded).max() + 1),
                               err_msg=variable.path)
  classifier = modeling.BertClassifier(config, num_labels=3)
  modeling.load_original_checkpoint(classifier, _ckpt(), log=False)
  classifier.classifier.dropout.rate = 0.0
  _close(classifier(encoder_inputs, training=True)["logits"], ref["classifier_logits"])
  span = modeling.BertSpanPredictor(config)
  modeling.load_original_checkpoint(span, _ckpt(), log=False)
  out = span(encoder_inputs, training=True)
  _close(out["start_logits"], ref["squad_start_logits"])
  _close(out["end_logits"], ref["squad_end_logits"])


def test_deferred_weights_are_drawn_as_at_construction_unless_loaded(tmp_path):
  """Built under deferred_initialization, a model draws no random value until
  load_weights: the checkpoint's values where it has them, elsewhere exactly
  what construction would have drawn."""
  import keras
  from modeling.checkpoints import loading

  def build(deferred):
    keras.utils.set_random_seed(3)
    with modeling.deferred_initialization(deferred) as deferral:
      return modeling.BertClassifier(_config(), num_labels=3), deferral

  drawn = build(False)[0].original_names()
  # No checkpoint: every weight drawn, as at construction.
  model, deferral = build(True)
  assert not np.any(model.original_names()["output_weights"].numpy())
  loading.load_weights(model, None, deferral)
  for name, variable in model.original_names().items():
    np.testing.assert_array_equal(variable.numpy(), drawn[name].numpy(), err_msg=name)
  # A checkpoint of the encoder alone: it is loaded, the head drawn.
  encoder = modeling.BertModel(_config())
  modeling.load_original_checkpoint(encoder, _ckpt(), log=False)
  prefix = modeling.save_original_checkpoint(encoder, str(tmp_path / "bert" / "model.ckpt"))
  model, deferral = build(True)
  loading.load_weights(model, prefix, deferral)
  reader = tf.train.load_checkpoint(prefix)
  assert not reader.has_tensor("output_weights")
  for name, variable in model.original_names().items():
    want = reader.get_tensor(name) if reader.has_tensor(name) else drawn[name].numpy()
    np.testing.assert_array_equal(variable.numpy(), want, err_msg=name)
  # Checkpoints holding every weight (ours, the original's format): nothing drawn.
  for prefix in (modeling.save_checkpoint(model, str(tmp_path / "ours" / "ckpt-1")),
                 modeling.save_original_checkpoint(model, str(tmp_path / "tf1" / "model.ckpt"))):
    again, deferral = build(True)
    deferral.pending = [(v, lambda *_: pytest.fail("drew a loaded weight"))
                        for v, _ in deferral.pending]
    loading.load_weights(again, prefix, deferral)
    assert not deferral.pending
    for a, b in zip(model.weights, again.weights):
      np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_head_initializer_draws_the_original_or_hugging_faces_distribution():
  """Every fine-tuning head: truncated_normal never passes two sd and spreads
  0.8796 x initializer_range (the sd of a unit normal cut at +-2); normal
  spreads initializer_range, 4.55% of it beyond two sd."""
  import keras
  config = _config(hidden_size=1024, intermediate_size=32, num_attention_heads=2,
                   vocab_size=100, initializer_range=0.05)
  spread = {"truncated_normal": 0.8796 * 0.05, "normal": 0.05}
  for name in spread:
    keras.utils.set_random_seed(1)
    heads = [
        modeling.BertClassifier(config, num_labels=3, head_initializer=name).classifier,
        modeling.BertTagger(config, 5, head_initializer=name).token_classifier,
        modeling.BertSpanPredictor(config, head_initializer=name).span,
        modeling.BertMultipleChoice(config, head_initializer=name).classifier]
    for head in heads:
      weights = head.output_weights.numpy().ravel()  # 1,024 to 5,120 values
      np.testing.assert_allclose(weights.std(), spread[name], rtol=0.06, err_msg=head.name)
      beyond = np.mean(np.abs(weights) > 2 * 0.05)
      if name == "truncated_normal":
        assert beyond == 0, head.name
      else:
        assert 0.02 < beyond < 0.08, (head.name, beyond)


def _every_task_model(config):
  return [
      modeling.BertPretrainer(config),
      modeling.BertPretrainer(config, next_sentence=False),
      modeling.BertClassifier(config, 3, head_initializer="normal"),
      modeling.BertClassifier(config, 4, problem=heads_lib.MULTI_LABEL),
      modeling.BertClassifier(config, 1),
      modeling.BertWindowClassifier(config, 2, pooling="max", gather_windows=False),
      modeling.BertMultipleChoice(config, num_choices=3),
      modeling.BertEmbedder(config, pooling="cls", normalize=True, scale=10.0),
      modeling.BertTagger(config, 5),
      modeling.BertSpanPredictor(config),
      modeling.BertWithHeads(modeling.BertModel(config), [heads_lib.MaskedLMHead(config)]),
      modeling.BertModel(config),
  ]


def test_every_model_rebuilds_from_its_config_drawing_the_same_weights():
  """type(model).from_config(model.get_config()) is the same model (class,
  settings, variable names and shapes), its weights drawn in the order the
  constructor draws them, under the dtype policy in effect: the bfloat16
  export needs nothing else."""
  import keras
  keras.utils.set_random_seed(5)
  models = _every_task_model(_config())
  keras.utils.set_random_seed(5)
  again = [type(m).from_config(json.loads(json.dumps(m.get_config()))) for m in models]
  for model, copy in zip(models, again):
    assert type(copy) is type(model) and copy.name == model.name
    assert copy.get_config() == model.get_config()
    assert [v.path for v in copy.weights] == [v.path for v in model.weights]
    for a, b in zip(model.weights, copy.weights):
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
  # Each head under its part name; a pre-trainer without NSP has none.
  assert isinstance(again[0].next_sentence, heads_lib.NextSentenceHead)
  assert again[1].head("next_sentence") is None and again[1].get_config()["next_sentence"] is False
  assert again[3].classifier.problem == heads_lib.MULTI_LABEL
  assert (again[5].pooling, again[5].gather_windows) == ("max", False)
  assert again[6].num_choices == 3 and again[7].sentence_embedding.pooling == "cls"
  previous = keras.config.dtype_policy()
  keras.config.set_dtype_policy("mixed_bfloat16")
  try:
    half = modeling.BertTagger.from_config(models[8].get_config())
  finally:
    keras.config.set_dtype_policy(previous)
  assert half.dtype_policy.compute_dtype == "bfloat16"


def test_a_task_model_puts_its_heads_on_the_encoder_it_is_given():
  """As keras-hub's task takes its backbone: the given (pretrained) encoder
  itself, not a copy, under the same checkpoint names."""
  encoder = modeling.BertModel(_config())
  modeling.load_original_checkpoint(encoder, _ckpt(), log=False)
  for model in (modeling.BertClassifier(encoder, 2), modeling.BertSpanPredictor(encoder),
                modeling.BertTagger(encoder, 3), modeling.BertMultipleChoice(encoder),
                modeling.BertEmbedder(encoder), modeling.BertPretrainer(encoder)):
    assert model.bert is encoder and model.config is encoder.config
    names = model.original_names()
    for name, variable in encoder.original_names().items():
      assert names[name] is variable
  # Heads on the released encoder, their weights loaded: the original's outputs.
  inputs = {k: _inputs()[k] for k in ("input_ids", "input_mask", "segment_ids")}
  span, classifier = modeling.BertSpanPredictor(encoder), modeling.BertClassifier(encoder, 3)
  modeling.load_original_checkpoint(span, _ckpt(), log=False)
  modeling.load_original_checkpoint(classifier, _ckpt(), log=False)
  _close(span(inputs)["start_logits"], _reference()["squad_start_logits"])
  _close(classifier(inputs)["logits"], _reference()["classifier_logits"])


def test_a_head_reads_the_positions_its_declaration_names():
  """The model runs its last layer at the positions the head's
  `positions_feature` lists, and the head reads them there: the original's
  masked-LM outputs, the positions given under another name."""

  class AtOtherPositions(heads_lib.MaskedLMHead):
    positions_feature = "probe_positions"

  config = _config()
  model = modeling.BertWithHeads(modeling.BertModel(config), [AtOtherPositions(config)])
  modeling.load_original_checkpoint(model, _ckpt(), log=False)
  inputs = _inputs()
  features = {k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")}
  out = model(dict(features, probe_positions=inputs["masked_lm_positions"]), training=False)
  _close(out["masked_lm_log_probs"], _reference()["mlm_log_probs"])
  at_masked = np.take_along_axis(_reference()["sequence_output"],
                                 inputs["masked_lm_positions"][:, :, None], axis=1)
  _close(out["sequence_output"], at_masked)
  # Without the feature the head has nothing to read, and no output.
  assert "masked_lm_log_probs" not in model(features, training=False)


def test_classifier_probabilities_are_the_heads_declaration():
  """One definition of what a user reads of a classifier's logits:
  softmax, a sigmoid per label, none for a score, in the logits' dtype."""
  logits = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0]])
  softmax = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
  np.testing.assert_allclose(heads_lib.probabilities(heads_lib.SINGLE_LABEL, logits), softmax,
                             rtol=1e-12)
  sigmoid = heads_lib.probabilities(heads_lib.MULTI_LABEL, logits)
  assert sigmoid.dtype == tf.float64
  np.testing.assert_allclose(sigmoid.numpy(), 1.0 / (1.0 + np.exp(-logits)), rtol=1e-14)
  assert heads_lib.probabilities(heads_lib.REGRESSION, logits) is None
  assert heads_lib.default_problem(1) == heads_lib.REGRESSION
  assert heads_lib.default_problem(3) == heads_lib.SINGLE_LABEL
  model = modeling.BertClassifier(_config(), 3, problem=heads_lib.MULTI_LABEL)
  out = model({k: _inputs()[k] for k in ("input_ids", "input_mask", "segment_ids")})
  np.testing.assert_allclose(out["probabilities"], 1.0 / (1.0 + np.exp(-out["logits"].numpy())),
                             rtol=1e-6)
