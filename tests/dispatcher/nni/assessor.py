"""nni.assessor: the interface of a customized assessor."""
from enum import Enum


class AssessResult(Enum):
    Good = True
    Bad = False


class Assessor:
    def assess_trial(self, trial_job_id, trial_history):
        raise NotImplementedError('Assessor: assess_trial not implemented')

    def trial_end(self, trial_job_id, success):
        pass

    def load_checkpoint(self):
        pass

    def save_checkpoint(self):
        pass
