"""How far a long loop is, how fast it goes and how long it has left.

    progress = Progress("examples", total=5000)
    for batch in batches:
      ...
      progress.advance(len(batch))
    progress.finish()

logs a line now and then (the first once the loop has run for `first_after`
seconds, then every `every` seconds) and a last one with the total time:

    Ran 1,280 of 5,000 examples: 256.0 examples/s, about 15 s left.
    Ran 5,000 examples in 19 s: 259.7 examples/s.

The rate leaves out the first update where there are later ones: it holds
the one-time cost of tracing and compiling, not the loop's pace. The
training loop, which logs a line of its own, asks `time_left()`.
"""

import time

from absl import logging


def duration(seconds):
  """Seconds as people read them: 12 s, 3 min 20 s, 2 h 05 min."""
  seconds = int(round(seconds))
  if seconds < 60:
    return "%d s" % seconds
  if seconds < 3600:
    return "%d min %02d s" % divmod(seconds, 60)
  return "%d h %02d min" % (seconds // 3600, seconds % 3600 // 60)


class Progress(object):
  """Counts what a loop has done of `total` (None: unknown) and logs it.
  `clock` is time.monotonic, or a test's."""

  def __init__(self, unit, total=None, first_after=10.0, every=60.0, verb="Ran",
               clock=time.monotonic):
    self.unit, self.total, self.verb = unit, total, verb
    self.first_after, self.every, self.clock = first_after, every, clock
    self.started = clock()
    self.done = 0
    self._first = None  # (time, count) after the first update.
    self._next_line = self.started + first_after

  def advance(self, count, log=True):
    """Notes `count` more done; logs a line when one is due."""
    self.done += count
    now = self.clock()
    if self._first is None:
      self._first = (now, self.done)
    if log and now >= self._next_line and (self.total is None or self.done < self.total):
      self._next_line = now + self.every
      logging.info("%s", self.line())

  def rate(self):
    """Units per second, from the first update on when there are later ones."""
    now = self.clock()
    if self._first is not None and self.done > self._first[1] and now > self._first[0]:
      return (self.done - self._first[1]) / (now - self._first[0])
    return self.done / max(now - self.started, 1e-9)

  def time_left(self):
    """Seconds until `total` at the current rate (None: no total or rate)."""
    rate = self.rate()
    if self.total is None or rate <= 0:
      return None
    return max(self.total - self.done, 0) / rate

  def line(self):
    text = "%s %s" % (self.verb, "{:,}".format(self.done))
    if self.total is not None:
      text += " of {:,}".format(self.total)
    text += " %s: %.1f %s/s" % (self.unit, self.rate(), self.unit)
    left = self.time_left()
    return text + (", about %s left." % duration(left) if left is not None else ".")

  def finish(self):
    """Logs the last line: how many, in how long, at what rate."""
    elapsed = self.clock() - self.started
    logging.info("%s %s %s in %s: %.1f %s/s.", self.verb, "{:,}".format(self.done), self.unit,
                 duration(elapsed), self.done / max(elapsed, 1e-9), self.unit)
