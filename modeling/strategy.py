"""The tf.distribute strategy a run trains under: one device, several GPUs
(MirroredStrategy), several machines (MultiWorkerMirroredStrategy) or a TPU.

    split_cpu(2)  # Tests: two replicas without accelerators.
    strategy = create_strategy("mirrored")
"""

import tensorflow as tf

from plumbing.errors import UserError


def split_cpu(count):
  """Makes `count` logical CPU devices, so that multi-replica strategies can be
  exercised on a machine without accelerators. Call before TensorFlow runs."""
  if count > 1:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def create_strategy(name=None, num_gpus=0, use_tpu=False, tpu_name=None,
                    tpu_zone=None, gcp_project=None, master=None):
  """The tf.distribute strategy the flags ask for.

  With no name: `tpu` if use_tpu, `mirrored` with more than one GPU, else
  `one_device` (TensorFlow's default strategy). `mirrored` on a machine
  without GPUs mirrors over the logical CPU devices (useful for tests).
  """
  if name == "multi_worker_mirrored":  # Before anything initialises the runtime.
    return tf.distribute.MultiWorkerMirroredStrategy()
  if not name:
    physical = tf.config.list_physical_devices("GPU")
    name = "tpu" if use_tpu else (
        "mirrored" if len(physical[:num_gpus or None]) > 1 else "one_device")
  gpus = tf.config.list_logical_devices("GPU")
  if num_gpus:
    gpus = gpus[:num_gpus]
  if name == "one_device":
    # TensorFlow's default strategy: one replica, ops placed as usual (on the
    # first GPU if there is one). OneDeviceStrategy computes the same but
    # copies each step's input, which small models notice.
    return tf.distribute.get_strategy()
  if name == "mirrored":
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)
  if name == "tpu":
    return _tpu_strategy(tpu_name, tpu_zone, gcp_project, master)
  raise UserError("Unknown --distribution_strategy %r." % name)


def _tpu_strategy(tpu_name, tpu_zone, gcp_project, master):
  """TPUStrategy on the named TPU (else `master`'s); one error line when it
  cannot be reached."""
  try:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu_name or master or "", zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
  except (ValueError, RuntimeError, OSError, tf.errors.OpError) as e:
    raise UserError(
        "No TPU could be reached (--tpu_name=%r, --tpu_zone=%r, --gcp_project=%r): "
        "%s" % (tpu_name, tpu_zone, gcp_project, e)) from None
  return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy):
  """Whether this process writes the run's outputs: always, except on the
  workers of a MultiWorkerMirroredStrategy other than its chief."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return True
  return resolver.task_type in (None, "chief") or (
      resolver.task_type == "worker" and resolver.task_id == 0 and
      "chief" not in resolver.cluster_spec().as_dict())
