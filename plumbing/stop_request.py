"""SIGTERM as a request to stop, noticed while TensorFlow runs a long call.

Preemptible VMs and TPU pods send SIGTERM shortly before they stop a
machine. Python runs a signal handler only when the main thread comes back
to the interpreter, which a training loop of `iterations_per_loop` steps
compiled into one call does not do until the loop ends. Here the signal's
arrival is written to a pipe (`signal.set_wakeup_fd`, done by Python's
C-level handler in whichever thread receives the signal) and a helper thread
waiting on that pipe calls `on_request` at once; the training loop reads the
flag `on_request` sets between two steps.
"""

import contextlib
import os
import signal
import threading

from plumbing.errors import Stopped

STOP_SIGNALS = (signal.SIGTERM,)
_QUIT = 0  # Not a signal number: tells the helper thread to end.


@contextlib.contextmanager
def watch(on_request, signals=STOP_SIGNALS):
  """Within the block, one of `signals` calls on_request(signum) (from a
  helper thread) instead of ending the process. Outside the main thread,
  where Python cannot install signal handlers, it does nothing."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  read_fd, write_fd = os.pipe()
  os.set_blocking(write_fd, False)
  wanted = {int(s) for s in signals}

  def wait_for_signals():
    while True:
      for signum in os.read(read_fd, 64):
        if signum == _QUIT:
          return
        if signum in wanted:
          on_request(signum)

  previous = {s: signal.signal(s, lambda *_: None) for s in signals}
  previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
  helper = threading.Thread(target=wait_for_signals, name="stop-request", daemon=True)
  helper.start()
  try:
    yield
  finally:
    signal.set_wakeup_fd(previous_fd)
    for s, handler in previous.items():
      signal.signal(s, handler)
    os.write(write_fd, bytes([_QUIT]))
    helper.join()
    os.close(read_fd)
    os.close(write_fd)


# Set while a `safe_points` block is active and SIGTERM has arrived.
_requested = threading.Event()


@contextlib.contextmanager
def safe_points(grace_seconds=60.0):
  """For jobs in plain Python loops (data generation): within the block,
  SIGTERM makes the next `check` raise Stopped, where the job can stop with
  nothing half-written. Work that never reaches a check (a runner's
  worker processes) is ended `grace_seconds` after the signal, as SIGTERM
  would have ended it (exit status 143)."""
  _requested.clear()

  def on_request(signum):
    _requested.set()
    timer = threading.Timer(grace_seconds, _end_now, args=(signum,))
    timer.daemon = True
    timer.start()

  with watch(on_request):
    try:
      yield
    finally:
      _requested.clear()


def _end_now(signum):
  if _requested.is_set():
    os.write(2, b"stopped: no safe point reached within the grace period after the signal.\n")
    os._exit(128 + signum)


def requested():
  return _requested.is_set()


def check(where):
  """Raises Stopped if SIGTERM arrived within a `safe_points` block; `where`
  says what the job was doing ("while writing records")."""
  if _requested.is_set():
    raise Stopped("SIGTERM %s; no partial output file is left. Run the same "
                  "command again to make it." % where)
