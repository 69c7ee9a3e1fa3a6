"""A trial with `import nni` (the bundled SDK, or NNI's when installed): STEPS
intermediate results STEP_SECONDS apart, then the final one; what it reported goes to
acked.log in its trial dir (each report returned, so it was acknowledged)."""
import json
import os
import time

import nni

STEPS = int(os.environ.get('TRIAL_STEPS', '6'))
STEP_SECONDS = float(os.environ.get('TRIAL_STEP_SECONDS', '0.65'))

x = nni.get_next_parameter()['x']
log = open(os.path.join(os.environ['NNI_SYS_DIR'], 'acked.log'), 'a')
for i in range(STEPS):
    time.sleep(STEP_SECONDS)
    nni.report_intermediate_result(x + i)
    log.write('PERIODICAL %d %s\n' % (i, json.dumps(x + i)))
    log.flush()
nni.report_final_result(x * 2)
log.write('FINAL 0 %s\n' % json.dumps(x * 2))
