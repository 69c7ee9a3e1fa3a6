# A trial to be killed. mode "graceful": waits; a KeyboardInterrupt (NNI 3 kills a trial
# with SIGINT) makes it write "interrupted" and report its progress before it ends.
# mode "stubborn": ignores SIGINT and SIGTERM, so only the SIGKILL 5 s later ends it.
import os
import signal
import time

import nni

params = nni.get_next_parameter()
sys_dir = os.environ["NNI_SYS_DIR"]
if params["mode"] == "stubborn":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(os.path.join(sys_dir, "started"), "w").close()
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    nni.report_intermediate_result(0.5)
    with open(os.path.join(sys_dir, "interrupted"), "w") as f:
        f.write("KeyboardInterrupt\n")
    raise
