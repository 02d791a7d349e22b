"""Models built without drawing their random weights, for weights a
checkpoint is about to replace: layers.Layer.add_weight asks `active()`
whether a deferral is on, and records the initializer it would have run."""

import contextlib
import threading


class DeferredInitialization(object):
  """The random weights made inside `deferred_initialization()`: they hold
  zeros until `initialize()` draws the values they would have had (each
  initializer's seed was fixed when it was made)."""

  def __init__(self):
    self.pending = []

  def initialize(self, except_for=()):
    """Draws every pending weight but those in `except_for` (given values)."""
    given = {id(v) for v in except_for}
    for variable, initializer in self.pending:
      if id(variable) not in given:
        variable.assign(initializer(variable.shape, variable.dtype))
    self.pending = []

  def cancel(self):
    """The weights were loaded: nothing to draw."""
    self.pending = []


_deferral = threading.local()


def active():
  """The DeferredInitialization of the enclosing block, or None."""
  return getattr(_deferral, "active", None)


@contextlib.contextmanager
def deferred_initialization(enabled=True):
  """Models built in this block skip drawing their random weights (yields a
  DeferredInitialization, or None when not `enabled`).

  For models whose weights a checkpoint is about to replace, as the
  original's init_from_checkpoint replaced the initializers: drawing a
  large model's truncated-normal values is most of the time building it
  takes. Whoever defers must initialize() unless every deferred
  weight is then loaded (loading.load_weights does).
  """
  previous = getattr(_deferral, "active", None)
  _deferral.active = DeferredInitialization() if enabled else None
  try:
    yield _deferral.active
  finally:
    _deferral.active = previous
