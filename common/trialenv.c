/* trialenv.c: a trial's environment as name/value pairs, rendered as an envp or as
 * shell exports (common/trialenv.h). */
#include <stdlib.h>
#include <string.h>

#include "common/trialenv.h"

const char *const trial_env_own_names[] = {
    "NNI_PLATFORM", "NNI_EXP_ID", "NNI_TRIAL_JOB_ID", "NNI_TRIAL_SEQ_ID", "NNI_SYS_DIR",
    "NNI_OUTPUT_DIR", "NNI_CODE_DIR", "NNI_TRIAL_COMMAND_CHANNEL", "MULTI_PHASE", "REUSE_MODE",
    "TRIALQ_CHANNEL_PATH", NULL,
};

void trial_env_init(struct trial_env *te)
{
    memset(te, 0, sizeof *te);
}

void trial_env_free(struct trial_env *te)
{
    for (int i = 0; i < te->n; i++) {
        free(te->v[i].name);
        free(te->v[i].value);
    }
    free(te->v);
    memset(te, 0, sizeof *te);
}

static int find(const struct trial_env *te, const char *name)
{
    for (int i = 0; i < te->n; i++)
        if (strcmp(te->v[i].name, name) == 0)
            return i;
    return -1;
}

static void set(struct trial_env *te, const char *name, const char *value, int word)
{
    int i = find(te, name);
    if (!value) {
        if (i >= 0) {
            free(te->v[i].name);
            free(te->v[i].value);
            memmove(&te->v[i], &te->v[i + 1], sizeof *te->v * (size_t)(te->n - i - 1));
            te->n--;
        }
        return;
    }
    if (i < 0) {
        if (te->n == te->cap) {
            te->cap = te->cap ? te->cap * 2 : 16;
            te->v = xrealloc(te->v, sizeof *te->v * (size_t)te->cap);
        }
        i = te->n++;
        te->v[i].name = xstrdup(name);
    } else {
        free(te->v[i].value);
    }
    te->v[i].value = xstrdup(value);
    te->v[i].word = word;
}

void trial_env_set(struct trial_env *te, const char *name, const char *value)
{
    set(te, name, value, 0);
}

void trial_env_set_word(struct trial_env *te, const char *name, const char *value)
{
    set(te, name, value, 1);
}

const char *trial_env_get(const struct trial_env *te, const char *name)
{
    int i = find(te, name);
    return i < 0 ? NULL : te->v[i].value;
}

/* The environ entry "NAME=value" is the variable name. */
static int named(const char *entry, const char *name)
{
    size_t k = strlen(name);
    return strncmp(entry, name, k) == 0 && entry[k] == '=';
}

const char *const trial_env_credential_names[] = {
    /* Azure (aml; the azure-identity and Azure CLI variables) */
    "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_PASSWORD", "AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_SAS_TOKEN",
    /* Alibaba Cloud (dlc) */
    "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
    "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY",
    /* AWS, Google Cloud */
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
    NULL,
};

int trial_env_is_credential(const char *entry)
{
    for (const char *const *n = trial_env_credential_names; *n; n++)
        if (named(entry, *n))
            return 1;
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) : strlen(entry);
    return len > strlen("AZURE__SECRET") && strncmp(entry, "AZURE_", 6) == 0 &&
           strncmp(entry + len - 7, "_SECRET", 7) == 0;
}

char **env_less_credentials(char *const *base, int pass)
{
    size_t nb = 0;
    while (base && base[nb])
        nb++;
    char **env = xcalloc(nb + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < nb; i++)
        if (pass || !trial_env_is_credential(base[i]))
            env[k++] = base[i];
    env[k] = NULL;
    return env;
}

void trial_env_unset_credentials_lines(struct strbuf *sb)
{
    sb_puts(sb, "unset");
    for (const char *const *n = trial_env_credential_names; *n; n++)
        sb_printf(sb, " %s", *n);
    /* and any other AZURE_*_SECRET, as trial_env_is_credential says */
    sb_puts(sb, "\nfor tq_v in $(compgen -e); do case $tq_v in AZURE_?*_SECRET) unset \"$tq_v\" ;; esac; done; "
                "unset tq_v\n");
}

char **trial_env_envp(const struct trial_env *te, char *const *base)
{
    size_t nb = 0;
    while (base && base[nb])
        nb++;
    char **env = xcalloc(nb + (size_t)te->n + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < nb; i++) {
        int skip = 0;
        for (int d = 0; trial_env_own_names[d] && !skip; d++)
            skip = named(base[i], trial_env_own_names[d]);
        for (int d = 0; d < te->n && !skip; d++)
            skip = named(base[i], te->v[d].name);
        if (!skip)
            env[k++] = xstrdup(base[i]);
    }
    for (int i = 0; i < te->n; i++)
        env[k++] = xasprintf("%s=%s", te->v[i].name, te->v[i].value);
    env[k] = NULL;
    return env;
}

void trial_env_envp_free(char **envp)
{
    for (char **v = envp; v && *v; v++)
        free(*v);
    free(envp);
}

static void assignment(struct strbuf *sb, const struct trial_env_var *v)
{
    sb_printf(sb, "%s=", v->name);
    if (v->word)
        sb_puts(sb, v->value);
    else
        sh_quote(sb, v->value);
}

void trial_env_export_lines(const struct trial_env *te, struct strbuf *sb)
{
    for (int i = 0; i < te->n; i++) {
        sb_puts(sb, "export ");
        assignment(sb, &te->v[i]);
        sb_puts(sb, "\n");
    }
}

void trial_env_export_line(const struct trial_env *te, struct strbuf *sb)
{
    sb_puts(sb, "export");
    for (int i = 0; i < te->n; i++) {
        sb_puts(sb, " ");
        assignment(sb, &te->v[i]);
    }
}
