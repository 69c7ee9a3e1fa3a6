/* trial_env.c: NNI's environment of a trial, the same on every platform (NNI's
 * variables, its GPUs); each platform renders it (common/trialenv.h) and adds its own. */
#include <stdio.h>

#include "common/trialenv.h"
#include "workers/worker.h"

void worker_trial_env(const struct worker *w, const struct trial *t, const char *sys_dir, const char *out_dir,
                      const char *code_dir, struct trial_env *te)
{
    char seq[32];
    snprintf(seq, sizeof seq, "%lld", (long long)t->sequence);
    trial_env_set_word(te, "NNI_PLATFORM", w->ops->name);
    trial_env_set(te, "NNI_EXP_ID", t->experiment_id);
    trial_env_set(te, "NNI_TRIAL_JOB_ID", t->id);
    trial_env_set_word(te, "NNI_TRIAL_SEQ_ID", seq);
    trial_env_set(te, "NNI_SYS_DIR", sys_dir);
    trial_env_set(te, "NNI_OUTPUT_DIR", out_dir);
    trial_env_set(te, "NNI_CODE_DIR", code_dir);
    trial_env_set_word(te, "MULTI_PHASE", "false");
    /* GPUs: the ones claimed with the trial (trialGpuNumber > 0); "" hides every GPU
     * (trialGpuNumber 0, NNI v3); not set without trialGpuNumber */
    const cJSON *gpus = worker_config_item(w, "trialGpuNumber");
    const char *gpu = t->gpu_indices ? t->gpu_indices : (cJSON_IsNumber(gpus) && gpus->valueint == 0 ? "" : NULL);
    trial_env_set(te, "CUDA_VISIBLE_DEVICES", gpu);
}
