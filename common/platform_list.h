/* platform_list.h: every platform trialq runs trials on, written once. Everything that
 * lists platforms iterates this: the worker registry (workers/platforms.c), the config
 * schema's platform table and its "one of ..." messages (config/schema_ts.c), the v1
 * conversion (config/v1convert.c), nnictl's lists and the repository's literal check
 * (tests/platform-literals.sh reads the X(...) lines below). Adding a platform is its
 * files and one line here (docs/architecture.md, "Adding a platform").
 *
 * X(id, on_host, shared_storage, machines):
 *   id              its name in a config (platform: id) and in code: workers/<id>.c
 *                   defines `platform_<id>`; config/schema_ts.c `<id>_fields` and
 *                   `<id>_check` (a `#define <id>_check NULL` where it has none);
 *                   config/v1convert.c `v1_<id>` (NNI's v1 form, or the error saying
 *                   it has none)
 *   on_host         1: its trials run on this host, their directories readable here
 *   shared_storage  1: its trial directories are on a storage of their own, outside
 *                   the experiment directory
 *   machines        the machine rows its trials run on: HOST (this host), LIST (each
 *                   entry of its machineList) or NONE (a cluster's nodes)
 * The order is the one nnictl and error messages list; the first is the default. */
#ifndef TRIALQ_PLATFORM_LIST_H
#define TRIALQ_PLATFORM_LIST_H

#define TRIALQ_PLATFORMS(X)                  \
    X(local, 1, 0, HOST)                     \
    X(remote, 0, 0, LIST)                    \
    X(openpai, 0, 1, NONE)                   \
    X(kubeflow, 0, 1, NONE)                  \
    X(frameworkcontroller, 0, 1, NONE)       \
    X(aml, 0, 1, NONE)                       \
    X(dlc, 0, 1, NONE)                       \
    X(adl, 0, 1, NONE)                       \
    X(dlts, 0, 1, NONE)                      \
    X(slurm, 0, 1, NONE)

/* "local, remote, ...": the names in this order, comma-separated (the string literal
 * ", local, remote, ..." less its first two characters) */
#define PLATFORM_NAME_ITEM_(id, on_host, shared_storage, machines) ", " #id
#define PLATFORM_NAMES (&(TRIALQ_PLATFORMS(PLATFORM_NAME_ITEM_))[2])

#endif
