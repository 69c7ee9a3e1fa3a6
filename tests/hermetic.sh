#!/usr/bin/env bash
# hermetic.sh CMD [ARG...]: how ctest starts every test (tq_add_test in
# tests/CMakeLists.txt), so that a test sees what its own ctest entry gives it and
# nothing of the developer's shell: every NNI_* and TRIALQ_* variable, the cloud
# credentials trialq reads (AZURE_*, ALIBABA_CLOUD_*, AWS_*), KUBECONFIG and the
# caller's Python environment (VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH, PYTHONHOME,
# PYTHONUSERBASE) are dropped, except the names the test's ENVIRONMENT property sets
# (ctest passes them in TQ_TEST_KEEP); HOME is a fresh directory, removed afterwards,
# so a test that forgets NNI_HOME cannot reach the caller's ~/nni-experiments.
set -u
keep=" ${TQ_TEST_KEEP:-} "
for name in $(compgen -e); do
    case $name in
    NNI_* | TRIALQ_* | AZURE_* | ALIBABA_CLOUD_* | AWS_* | KUBECONFIG | VIRTUAL_ENV | CONDA_PREFIX | \
        PYTHONPATH | PYTHONHOME | PYTHONUSERBASE)
        [[ $keep == *" $name "* ]] || unset "$name"
        ;;
    esac
done
unset TQ_TEST_KEEP
home=$(mktemp -d "${TMPDIR:-/tmp}/trialq-test-home-XXXXXX") || exit 1
export HOME=$home
# the test runs in the foreground (a background job of a script would ignore SIGINT,
# and so would everything it starts), then its HOME goes; a timeout's kill (ctest kills
# the whole process tree) leaves only that empty directory behind
rc=0
"$@" || rc=$?
rm -rf "$home"
exit "$rc"
