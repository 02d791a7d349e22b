"""The optimizer against the original optimization.py, plus LAMB, and gradient
accumulation as the training loop does it."""


import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import (MODELING_REF, PRETRAINING_FEATURES, data_file, reference_config)
import modeling
from modeling import losses as losses_lib
from modeling import optimization

REF = MODELING_REF
FEATURES = PRETRAINING_FEATURES
_config = reference_config


def _pretrainer(dropout=0.0):
  model = modeling.BertPretrainer(_config(hidden_dropout_prob=dropout,
                                          attention_probs_dropout_prob=dropout))
  modeling.load_original_checkpoint(model, data_file(REF + "model.ckpt"), log=False)
  return model


def test_six_steps_match_original():
  ref = dict(np.load(data_file(REF + "optimizer_steps.npz")))
  inputs = dict(np.load(data_file(REF + "inputs.npz")))
  features = {k: tf.constant(inputs[k]) for k in FEATURES}
  model = _pretrainer()
  optimizer = optimization.create_optimizer(2e-3, num_train_steps=8, num_warmup_steps=3)
  learning_rates, losses = [], []
  for _ in range(6):
    learning_rates.append(float(optimizer.learning_rate))
    with tf.GradientTape() as tape:
      loss = model(features, training=True)["loss"]
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    losses.append(float(loss))
  np.testing.assert_allclose(learning_rates, ref["learning_rates"], rtol=0, atol=1e-9)
  np.testing.assert_allclose(losses, ref["losses"], rtol=0, atol=1e-5)
  for name, variable in model.original_names().items():
    np.testing.assert_allclose(variable.numpy(), ref["var/" + name], rtol=0, atol=1e-6,
                               err_msg=name)


@pytest.mark.parametrize("fused", [True, False])
def test_hugging_face_trainer_flags_take_pytorchs_steps(fused, monkeypatch):
  """--adam_bias_correction, --adam_epsilon=1e-8, --weight_decay_rate=0,
  --decay_after_warmup and --clip_dense_norm (Hugging Face Trainer's
  defaults): six steps on the reference model, whose batch looks several
  words up more than once, against PyTorch's AdamW, clip_grad_norm_ and
  transformers' linear schedule taking them on the same model
  (trainer_steps.npz, made by reference_makers/make_torch_trainer_reference.py)."""
  from modeling.checkpoints import huggingface  # pylint: disable=g-import-not-at-top
  ref = dict(np.load(data_file(REF + "trainer_steps.npz")))
  inputs = dict(np.load(data_file(REF + "inputs.npz")))
  features = {k: tf.constant(inputs[k]) for k in FEATURES}
  if not fused:
    monkeypatch.setattr(optimization.AdamWeightDecay, "_fused", lambda self: False)
  model = _pretrainer()
  optimizer = optimization.create_optimizer(
      1e-3, num_train_steps=10, num_warmup_steps=2, weight_decay_rate=0.0,
      adam_bias_correction=True, adam_epsilon=1e-8, decay_after_warmup=True,
      clip_dense_norm=True)
  learning_rates, losses = [], []
  for _ in range(len(ref["losses"])):
    learning_rates.append(float(optimizer.learning_rate))
    with tf.GradientTape() as tape:
      loss = model(features, training=True)["loss"]
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    losses.append(float(loss))
  np.testing.assert_allclose(learning_rates, ref["learning_rates"], rtol=0, atol=1e-9)
  np.testing.assert_allclose(losses, ref["losses"], rtol=0, atol=2e-5)
  tensors = {name: v.numpy() for name, v in model.original_names().items()}
  ours, _ = huggingface.hf_tensors(tensors, _config().to_dict(), "BertForPreTraining")
  compared = 0
  for name, value in ours.items():
    if "param/" + name in ref:
      # A key bias adds the same to every score of a query, which softmax
      # ignores: its gradient is rounding noise, and Adam scales noise up to
      # full steps, so the two sides' noise shows (up to 1e-4 here).
      atol = 2e-4 if name.endswith("key.bias") else 2e-5
      np.testing.assert_allclose(value, ref["param/" + name], rtol=0, atol=atol, err_msg=name)
      compared += 1
  assert compared == len(ours) > 40


@pytest.mark.parametrize("fused", [True, False])
def test_clip_dense_norm_is_clip_grad_norm_over_repeated_lookups(fused, monkeypatch):
  """The same flags on the reference classifier, whose word embeddings get
  gradients by lookup only (sliced), on a batch of five words each looked
  up many times, with every step clipped (the gradients' norm is about
  1.6): PyTorch's clip_grad_norm_ and --clip_dense_norm take the same steps
  (trainer_steps.npz's classifier/...). Here the embeddings' share of the
  norm is small, so the original's count of lookups would land within the
  tolerance too: test_clipping_counts_lookups_or_the_summed_gradient tells
  the two apart by hand."""
  from modeling.checkpoints import huggingface  # pylint: disable=g-import-not-at-top
  ref = dict(np.load(data_file(REF + "trainer_steps.npz")))
  inputs = dict(np.load(data_file(REF + "inputs.npz")))
  features = {"input_ids": tf.constant(ref["classifier/input_ids"], tf.int32),
              "input_mask": tf.constant(inputs["input_mask"]),
              "segment_ids": tf.constant(inputs["segment_ids"]),
              "label_ids": tf.constant(inputs["label_ids"])}
  if not fused:
    monkeypatch.setattr(optimization.AdamWeightDecay, "_fused", lambda self: False)

  def steps():
    model = modeling.BertClassifier(_config(hidden_dropout_prob=0.0,
                                            attention_probs_dropout_prob=0.0), num_labels=3)
    modeling.load_original_checkpoint(model, data_file(REF + "model.ckpt"), log=False)
    for layer in model._flatten_layers():  # pylint: disable=protected-access
      if isinstance(layer, modeling.blocks.layers.Dropout):
        layer.rate = 0.0  # The head's own dropout too.
    optimizer = optimization.create_optimizer(
        1e-3, num_train_steps=10, num_warmup_steps=2, weight_decay_rate=0.0,
        adam_bias_correction=True, adam_epsilon=1e-8, decay_after_warmup=True,
        clip_dense_norm=True)
    loss_fn, losses = losses_lib.ModelLoss(model), []
    for _ in range(len(ref["classifier/losses"])):
      with tf.GradientTape() as tape:
        loss = loss_fn(model, features, loss_fn.totals(features))
      gradients = tape.gradient(loss, model.trainable_variables)
      optimizer.apply_gradients(zip(gradients, model.trainable_variables))
      losses.append(float(loss))
    tensors = {name: v.numpy() for name, v in model.original_names().items()}
    return losses, huggingface.hf_tensors(tensors, _config().to_dict(),
                                          "BertForSequenceClassification")[0]

  def worst(weights):
    return max(np.abs(value - ref["classifier/param/" + name]).max()
               for name, value in weights.items() if not name.endswith("key.bias"))

  losses, weights = steps()
  np.testing.assert_allclose(losses, ref["classifier/losses"], rtol=0, atol=2e-5)
  assert len(weights) > 40 and worst(weights) < 2e-5


def test_schedule_shape():
  schedule = optimization.WarmupPolynomialDecay(1.0, num_train_steps=10, num_warmup_steps=4)
  got = [float(schedule(t)) for t in range(12)]
  want = [0.0, 0.25, 0.5, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.0]
  np.testing.assert_allclose(got, want, atol=1e-7)
  no_warmup = optimization.WarmupPolynomialDecay(2.0, num_train_steps=4)
  np.testing.assert_allclose([float(no_warmup(t)) for t in range(5)], [2, 1.5, 1, 0.5, 0], atol=1e-7)


def test_decay_after_warmup_is_hugging_face_linear_schedule():
  # Hugging Face's get_linear_schedule_with_warmup: t / w while t < w, then
  # (T - t) / (T - w), never below 0.
  schedule = optimization.WarmupPolynomialDecay(1.0, num_train_steps=10, num_warmup_steps=4,
                                                decay_after_warmup=True)
  want = [t / 4 if t < 4 else max(0.0, (10 - t) / 6) for t in range(12)]
  np.testing.assert_allclose([float(schedule(t)) for t in range(12)], want, atol=1e-7)
  assert want[4:7] == [1.0, 5 / 6, 4 / 6]


def test_weight_decay_follows_original_names():
  model = _pretrainer()
  optimizer = optimization.create_optimizer(1e-3, 10, 1)
  optimizer.build(model.trainable_variables)
  names = {id(v): n for n, v in model.original_names().items()}
  for variable in model.trainable_variables:
    name = names[id(variable)]
    excluded = "LayerNorm" in name or "bias" in name
    assert optimizer._do_use_weight_decay(variable) == (not excluded), name


def _classifier_batch(size, seed):
  rng = np.random.RandomState(seed)
  ids = rng.randint(1, 99, size=(size, 12)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[:, 9:] = 0
  return {"input_ids": ids, "input_mask": mask,
          "segment_ids": (np.arange(12) >= 6).astype(np.int32)[None].repeat(size, 0),
          "label_ids": rng.randint(0, 3, size=size).astype(np.int32)}


@pytest.mark.parametrize("optimizer_name", ["adamw", "lamb"])
def test_gradient_accumulation_equals_large_batch(optimizer_name, tmp_path):
  """The training loop's micro-batches (4 of 2) make the updates one batch of
  8 makes, with either optimizer."""
  from modeling import training  # pylint: disable=g-import-not-at-top
  batch = _classifier_batch(8, seed=3)
  trained = {}
  for accumulation in (1, 4):
    keras.utils.set_random_seed(7)
    model = modeling.BertClassifier(_config(hidden_dropout_prob=0.0,
                                            attention_probs_dropout_prob=0.0), 3)
    # The head's own dropout (0.1) would draw other masks for other splits.
    model.classifier.dropout.rate = 0.0
    optimizer = optimization.create_optimizer(1e-3, 10, 2, optimizer=optimizer_name)
    settings = training.TrainingSettings(
        output_dir=str(tmp_path / str(accumulation)), num_train_steps=3, train_batch_size=8,
        gradient_accumulation_steps=accumulation, iterations_per_loop=3)
    training.train(tf.distribute.get_strategy(), model, losses_lib.ModelLoss(model),
                   lambda size, context: tf.data.Dataset.from_tensors(batch).repeat(),
                   settings, optimizer=optimizer)
    assert int(optimizer.iterations) == 3
    trained[accumulation] = [v.numpy() for v in model.trainable_variables]
  for a, b in zip(trained[1], trained[4]):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_lamb_trust_ratio_step():
  variable = keras.Variable(np.array([3.0, 4.0], np.float32), name="kernel")
  optimizer = optimization.Lamb(learning_rate=0.1, weight_decay_rate=0.0)
  optimizer.apply_gradients([(tf.constant([0.5, -2.0]), variable)])
  # First step: m_hat = g, v_hat = g^2, update = sign(g) (eps aside);
  # trust ratio = ||w|| / ||update|| = 5 / sqrt(2).
  step = 0.1 * (5.0 / np.sqrt(2.0)) * np.array([1.0, -1.0])
  np.testing.assert_allclose(variable.numpy(), np.array([3.0, 4.0]) - step, atol=1e-5)


def _torch_adamw(params, grads_by_step, lr, weight_decay, decays, eps=1e-6, b1=0.9, b2=0.999):
  """PyTorch's AdamW step written out in NumPy: decoupled decay, then the
  bias-corrected Adam step."""
  params = [p.astype(np.float64) for p in params]
  m = [np.zeros_like(p) for p in params]
  v = [np.zeros_like(p) for p in params]
  for t, grads in enumerate(grads_by_step, start=1):
    for i, g in enumerate(grads):
      if decays[i]:
        params[i] = params[i] * (1 - lr * weight_decay)
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      denom = np.sqrt(v[i]) / np.sqrt(1 - b2 ** t) + eps
      params[i] = params[i] - lr / (1 - b1 ** t) * m[i] / denom
  return params


@pytest.mark.parametrize("fused", [True, False])
def test_adam_bias_correction_is_pytorch_adamw(fused, monkeypatch):
  rng = np.random.RandomState(5)
  start = [rng.randn(3, 2).astype(np.float32), rng.randn(2).astype(np.float32)]
  steps = [[rng.randn(3, 2).astype(np.float32) * 0.1, rng.randn(2).astype(np.float32) * 0.1]
           for _ in range(4)]
  kernel = keras.Variable(start[0], name="kernel")
  bias = keras.Variable(start[1], name="bias")
  optimizer = optimization.AdamWeightDecay(learning_rate=0.01, weight_decay_rate=0.1,
                                           bias_correction=True)
  if not fused:
    monkeypatch.setattr(optimization.AdamWeightDecay, "_fused", lambda self: False)
  for grads in steps:
    optimizer.apply_gradients([(tf.constant(grads[0]), kernel), (tf.constant(grads[1]), bias)])
  want = _torch_adamw(start, steps, 0.01, 0.1, decays=[True, False])
  np.testing.assert_allclose(kernel.numpy(), want[0], rtol=0, atol=1e-6)
  np.testing.assert_allclose(bias.numpy(), want[1], rtol=0, atol=1e-6)
  # The first update of a bias-corrected Adam moves each weight by about lr.
  assert np.abs(bias.numpy() - start[1]).max() < 4 * 0.01 + 1e-6


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("epsilon", [1e-6, 1e-8])
def test_adam_epsilon_is_pytorch_adamw_epsilon(epsilon, fused, monkeypatch):
  # Gradients near 1e-6, where the two epsilons give updates about 2x apart.
  rng = np.random.RandomState(7)
  start = rng.randn(4).astype(np.float32)
  steps = [[rng.randn(4).astype(np.float32) * 1e-6] for _ in range(3)]
  variable = keras.Variable(start, name="bias")
  optimizer = optimization.AdamWeightDecay(learning_rate=0.01, bias_correction=True,
                                           epsilon=epsilon)
  if not fused:
    monkeypatch.setattr(optimization.AdamWeightDecay, "_fused", lambda self: False)
  for grads in steps:
    optimizer.apply_gradients([(tf.constant(grads[0]), variable)])
  want = _torch_adamw([start], steps, 0.01, 0.0, decays=[False], eps=epsilon)[0]
  np.testing.assert_allclose(variable.numpy(), want, rtol=0, atol=1e-6)
  other = _torch_adamw([start], steps, 0.01, 0.0, decays=[False], eps=1e-14 / epsilon)[0]
  assert np.abs(other - want).max() > 1e-3


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dense", [False, True])
def test_clipping_counts_lookups_or_the_summed_gradient(dense, fused, monkeypatch):
  # Row 1 looked up twice with gradient w = (3, 4) each time: the original's
  # norm counts two slices, sqrt(2) * 5; the summed gradient (6, 8) has norm
  # 10. Clipped to 1, the row's gradient is (6, 8) / 7.07 or (0.6, 0.8); with
  # epsilon 1 the first corrected Adam step is g / (|g| + 1), by hand.
  table = keras.Variable(np.zeros((3, 2), np.float32), name="embeddings")
  optimizer = optimization.AdamWeightDecay(learning_rate=1.0, weight_decay_rate=0.0,
                                           epsilon=1.0, bias_correction=True,
                                           global_clipnorm=1.0, clip_dense_norm=dense)
  if not fused:
    monkeypatch.setattr(optimization.AdamWeightDecay, "_fused", lambda self: False)
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.gather(table, [1, 1]) * tf.constant([3.0, 4.0]))
  gradient = tape.gradient(loss, table)
  assert isinstance(gradient, tf.IndexedSlices)
  optimizer.apply_gradients([(gradient, table)])
  clipped = np.array([6.0, 8.0]) / (10.0 if dense else np.sqrt(2.0) * 5.0)
  np.testing.assert_allclose(table.numpy()[1], -clipped / (np.abs(clipped) + 1.0), atol=1e-5)
  np.testing.assert_allclose(table.numpy()[[0, 2]], 0.0)


def test_original_adam_first_step_is_larger_than_corrected():
  # Without correction, m / sqrt(v) after one step is (1 - b1) / sqrt(1 - b2)
  # = 3.16 (times the gradient's sign): the original's first update.
  for corrected, factor in ((False, 0.1 / np.sqrt(0.001)), (True, 1.0)):
    variable = keras.Variable(np.zeros(2, np.float32), name="bias")
    optimizer = optimization.AdamWeightDecay(learning_rate=0.01, bias_correction=corrected)
    optimizer.apply_gradients([(tf.constant([0.5, -2.0]), variable)])
    np.testing.assert_allclose(variable.numpy(), [-0.01 * factor, 0.01 * factor], rtol=1e-4)


def test_training_settings_reach_the_optimizer():
  from modeling import training  # pylint: disable=g-import-not-at-top
  settings = training.TrainingSettings(output_dir="unused", num_train_steps=10,
                                       train_batch_size=2, weight_decay_rate=0.0,
                                       adam_bias_correction=True, adam_epsilon=1e-8,
                                       num_warmup_steps=2, decay_after_warmup=True,
                                       clip_dense_norm=True)
  optimizer = training.create_optimizer(settings)
  assert optimizer.bias_correction and optimizer.weight_decay_rate == 0.0
  assert optimizer.epsilon == 1e-8 and optimizer.clip_dense_norm
  assert float(optimizer._learning_rate(2)) == pytest.approx(settings.learning_rate)
  default = training.create_optimizer(training.TrainingSettings("unused", 10, 2))
  assert not default.bias_correction and default.weight_decay_rate == 0.01
  assert default.epsilon == 1e-6 and not default._learning_rate.decay_after_warmup
  assert not default.clip_dense_norm
