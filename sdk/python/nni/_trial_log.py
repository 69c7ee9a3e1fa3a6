"""trial.log, as NNI's SDK writes it: under a manager, the 'nni' logger's records go to
$NNI_OUTPUT_DIR/trial.log (warnings and errors to stderr too), and on the local platform every line the trial prints is
also written there as "[YYYY-MM-DD HH:MM:SS] PRINT <line>" (the web UI's "trial log").

One difference, on purpose: NNI replaces sys.stdout, so that prints leave
trial.stdout; here they reach trial.stdout as well (and a trial's own NNISDK_MEb
lines still reach the manager).
"""

import atexit
import logging
import os
import sys
import threading
import time

TIME_FORMAT = '%Y-%m-%d %H:%M:%S'
LOG_FORMAT = '[%(asctime)s] %(levelname)s (%(name)s/%(threadName)s) %(message)s'


class PrintTee:
    """Writes go to the wrapped stream unchanged and, line by line, to the log file.
    Everything else (fileno, buffer, encoding, isatty, ...) is the wrapped stream's."""

    def __init__(self, stream, log_file):
        self._stream = stream
        self._log = log_file
        self._lock = threading.Lock()
        self._partial = ''
        self._partial_time = None

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def write(self, s):
        n = self._stream.write(s)
        with self._lock:
            now = time.strftime(TIME_FORMAT)
            if not self._partial:
                self._partial_time = now
            lines = (self._partial + s).split('\n')
            self._partial = lines.pop()
            if lines:
                # each line is stamped with the time its first character was printed
                stamps = [self._partial_time] + [now] * (len(lines) - 1)
                self._log.write(''.join('[%s] PRINT %s\n' % (t, line) for t, line in zip(stamps, lines)))
                self._log.flush()
                self._partial_time = now
        return len(s) if n is None else n

    def flush(self):
        self._stream.flush()
        with self._lock:
            self._log.flush()

    def close_log(self):
        """Writes an unfinished last line (at exit)."""
        with self._lock:
            if self._partial:
                self._log.write('[%s] PRINT %s\n' % (self._partial_time, self._partial))
                self._partial = ''
            self._log.flush()


def init(platform):
    """Called once, when nni is imported."""
    if not platform or platform == 'unittest':
        return
    if os.environ.get('REUSE_MODE', '').lower() == 'true':
        return  # NNI logs to the runner's stdout in reuse mode
    out_dir = os.environ.get('NNI_OUTPUT_DIR') or os.environ.get('NNI_SYS_DIR')
    if not out_dir:
        return
    try:
        os.makedirs(out_dir, exist_ok=True)
        log_file = open(os.path.join(out_dir, 'trial.log'), 'a', encoding='utf-8')
    except OSError:
        return  # no trial.log is no reason to fail a trial
    handler = logging.StreamHandler(log_file)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, TIME_FORMAT))
    handler.setLevel(logging.INFO)
    logger = logging.getLogger('nni')
    logger.addHandler(handler)
    # warnings and errors (a closed channel, say) also go to stderr, as without a log
    errors = logging.StreamHandler()
    errors.setFormatter(logging.Formatter(LOG_FORMAT, TIME_FORMAT))
    errors.setLevel(logging.WARNING)
    logger.addHandler(errors)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    if platform == 'local' and sys.stdout is not None and not isinstance(sys.stdout, PrintTee):
        tee = PrintTee(sys.stdout, log_file)
        sys.stdout = tee
        atexit.register(tee.close_log)
