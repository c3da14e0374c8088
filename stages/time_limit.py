"""A time limit on a call: users' stages, and extraction inside its child process.

SIGALRM interrupts Python code at the limit (the `re` module's matching too). It cannot interrupt a C call
that does not return to Python; for that, a watchdog thread ends the worker process at twice the limit, and no
sooner than WATCHDOG_MIN_S past it: on a loaded machine an interrupted call may wait that long for a core. The
filter pass has noted the stage and file (pipeline/passes/filtering.py's crash marker), so the run stops in one line
naming them instead of the worker hanging for ever. Signals are handled only in the main thread; elsewhere the call runs unbounded.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time


WATCHDOG_MIN_S = 5.0  # a call 0.2 s over a 0.2 s limit is a busy machine, not C code that never returns


class TimeLimitExceeded(BaseException):
    """Raised at the limit. A BaseException so that a stage's own `except Exception` does not swallow it."""


def call_with_time_limit(seconds: float | None, function, *args, end_process: bool = True):
    """function(*args), or TimeLimitExceeded once it has run `seconds`; with `end_process`, the process ends
    at 2 x `seconds` (at least `seconds` + WATCHDOG_MIN_S) if the call has not returned by then."""
    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread():
        return function(*args)

    armed, fired = [True], []

    def on_alarm(signum, frame):
        if armed:
            fired.append(True)
            raise TimeLimitExceeded()

    returned = threading.Event()
    end_at = seconds + max(seconds, WATCHDOG_MIN_S)

    def watchdog():
        if not returned.wait(end_at):
            sys.stderr.write(f"a call ran {end_at:g} s without returning to Python; ending its worker\n")
            sys.stderr.flush()
            os._exit(70)  # EX_SOFTWARE: the driver reads the crash marker and names the stage and file

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_delay, previous_interval = 0.0, 0.0
    started = time.monotonic()
    if end_process:
        threading.Thread(target=watchdog, daemon=True, name="time-limit-watchdog").start()
    try:
        # The alarm repeats: an exception raised where Python ignores it (a weakref callback, a __del__)
        # is swallowed, so one alarm alone may not stop the call.
        previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, seconds, 0.01)
        result = function(*args)
        if fired:  # every alarm was swallowed, yet the call ran over its limit
            raise TimeLimitExceeded()
        return result
    finally:
        # First, before anything that could let an alarm's handler run: from here a late alarm does nothing.
        # (Had the watchdog been told first, an alarm landing there raised out of this block, timer still on.)
        armed.clear()
        signal.setitimer(signal.ITIMER_REAL, 0)
        returned.set()
        # None means the old handler was not set from Python; the default is the best we can restore.
        signal.signal(signal.SIGALRM, previous_handler if previous_handler is not None else signal.SIG_DFL)
        if previous_delay > 0:
            # Give back what was left of an outer timer (at least a moment, so it still fires).
            remaining = max(previous_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, remaining, previous_interval)
