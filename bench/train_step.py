"""One optimisation step as a compiled function: the bare step that
bench_model.py times beside the training driver's loop."""

import tensorflow as tf


def make_train_step(model, optimizer, loss_key="loss", jit_compile=False,
                    loss_scale=False):
  """Returns step(features) -> loss: forward, backward and update in one graph.

  `jit_compile=True` compiles the whole step with XLA. With `loss_scale`, the
  optimizer is a keras LossScaleOptimizer (float16 training).
  """
  @tf.function(jit_compile=jit_compile, reduce_retracing=True)
  def step(features):
    with tf.GradientTape() as tape:
      loss = model(features, training=True)[loss_key]
      scaled = optimizer.scale_loss(loss) if loss_scale else loss
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
  return step
