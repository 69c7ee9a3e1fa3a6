# The customized assessor v1_local.yml names (codeDir . + classFileName my_assessor.py):
# the config check wants the module file to exist, as NNI's v1 check of classFileName did.
from nni.assessor import Assessor, AssessResult


class MyAssessor(Assessor):
    def __init__(self, epochs=5):
        self.epochs = epochs

    def assess_trial(self, trial_job_id, trial_history):
        return AssessResult.Good
