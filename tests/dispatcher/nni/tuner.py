"""nni.tuner.Tuner: the interface of a customized tuner (NNI's method names)."""
from . import NoMoreTrialError


class Tuner:
    def generate_parameters(self, parameter_id, **kwargs):
        raise NotImplementedError('Tuner: generate_parameters not implemented')

    def generate_multiple_parameters(self, parameter_id_list, **kwargs):
        result = []
        for parameter_id in parameter_id_list:
            try:
                res = self.generate_parameters(parameter_id, **kwargs)
            except NoMoreTrialError:
                return result
            result.append(res)
        return result

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        raise NotImplementedError('Tuner: receive_trial_result not implemented')

    def trial_end(self, parameter_id, success, **kwargs):
        pass

    def update_search_space(self, search_space):
        raise NotImplementedError('Tuner: update_search_space not implemented')

    def import_data(self, data):
        pass

    def load_checkpoint(self):
        pass

    def save_checkpoint(self):
        pass
