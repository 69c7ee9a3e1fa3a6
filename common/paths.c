/* paths.c: where things live: home directories and the trialq home. */
#include "common/common.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *home_dir(void)
{
    const char *h = getenv("HOME");
    if (h && *h)
        return xstrdup(h);
    struct passwd *pw = getpwuid(getuid());
    return xstrdup(pw && pw->pw_dir ? pw->pw_dir : "/");
}

char *path_abs(const char *base_dir, const char *path)
{
    char *joined;
    if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
        char *h = home_dir();
        joined = xasprintf("%s%s", h, path + 1);
        free(h);
    } else if (path[0] == '/') {
        joined = xstrdup(path);
    } else {
        joined = path_join(base_dir, path);
    }
    char *real = realpath(joined, NULL);
    if (real) {
        free(joined);
        return real;
    }
    return joined; /* does not exist (yet): absolute but not canonical */
}

char *trialq_home(const char *override)
{
    if (override && *override)
        return path_abs(".", override);
    const char *env = getenv("NNI_HOME");
    if (env && *env)
        return path_abs(".", env);
    char *h = home_dir();
    char *r = path_join(h, "nni-experiments");
    free(h);
    return r;
}

char *trialq_db_path(const char *home)
{
    return path_join(home, "trialq.db");
}

