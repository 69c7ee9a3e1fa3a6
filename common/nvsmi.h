/* nvsmi.h: what `nvidia-smi -q -x` says of a host's GPUs: its XML parsed from a text
 * buffer (the local worker runs the tool itself, gpu_collect_local; the remote one over
 * SSH), for the GPU inventory of queue/gpu.h. */
#ifndef TRIALQ_NVSMI_H
#define TRIALQ_NVSMI_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* What NNI's GPU collector runs; its stdout is what gpu_parse_nvsmi reads. */
#define GPU_NVSMI_COMMAND "nvidia-smi -q -x"

struct gpu_info {
    int index;             /* order of the <gpu> element (NNI's index) */
    char uuid[96];
    char name[96];         /* product_name */
    int64_t mem_total;     /* MiB; -1 unknown */
    int64_t mem_used;      /* MiB; -1 unknown */
    double util;           /* gpu_util %; -1 unknown (N/A) */
    double mem_util;       /* memory_util %; -1 unknown */
    int active_procs;      /* number of <process_info> */
};

/* Parses the XML of `nvidia-smi -q -x`. Returns 0 with *out (caller frees; NULL when
 * *n is 0) or -1 with e naming what is wrong (not nvidia-smi's XML, e.g. its "couldn't
 * communicate with the NVIDIA driver" text). */
int gpu_parse_nvsmi(const char *buf, size_t len, struct gpu_info **out, int *n, struct errbuf *e);

/* Runs nvidia-smi -q -x from PATH on this host (killed after timeout_ms) and parses it.
 * -1 with e: not found on PATH, failed (its first output line), timed out, bad output. */
int gpu_collect_local(int timeout_ms, struct gpu_info **out, int *n, struct errbuf *e);

#endif
